package base

// github.com/ncruces/go-sqlite3 v0.37.0's DSN language, as cleolease
// reads and extends it. What ncruces does with a DSN (driver/driver.go,
// newConnector and Connect; conn.go, newConn and openDB):
//
//   - A DSN starting with "file:" must pass url.Parse and its query
//     url.ParseQuery, or the open fails. The driver reads _txlock
//     ("deferred", "concurrent", "immediate", "exclusive"; another value
//     fails the open) and _timefmt (any layout), and openDB runs each
//     _pragma value, in their order, as "PRAGMA " + value + ";" in one
//     sqlite3_exec (an error fails the open: "sqlite3: invalid _pragma").
//     The whole DSN goes to sqlite3_open_v2 with SQLITE_OPEN_URI, so SQLite
//     applies its own URI parameters (mode, cache, immutable, nolock, psow,
//     modeof, vfs) and ignores the rest.
//   - Any other DSN is a plain file name, whole: ncruces reads no
//     parameter of it, and SQLite opens a file named after all of it, '?'
//     and what follows included.
//   - With no _pragma at all, the driver sets a busy timeout of one minute.

import (
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/ncruces/go-sqlite3"
)

// ncrucesParams are the query parameters of a file: URI that ncruces
// itself reads; SQLite reads sqliteURIParams.
var ncrucesParams = map[string]bool{"_pragma": true, "_timefmt": true, "_txlock": true}

// sqliteURIParams are SQLite's own URI parameters (sqlite.org/uri.html).
var sqliteURIParams = map[string]bool{
	"cache": true, "immutable": true, "mode": true, "modeof": true, "nolock": true, "psow": true, "vfs": true,
}

// defaults are the settings every connection gets unless its DSN sets
// them with a _pragma.
var defaults = []struct {
	name, value string
	onDisk      bool // only for writable on-disk databases
}{
	{"busy_timeout", "30000", false},
	{"synchronous", "NORMAL", false},
	{"foreign_keys", "1", false},
	{"journal_mode", "WAL", true}, // not in sqlite3_dotlk builds: see walByDefault
}

// Dialect is ncruces's DSN language: a plain file name, or a "file:" URI
// with SQLite's parameters and ncruces's _pragma (repeatable, run in
// order), _txlock and _timefmt.
type Dialect struct{}

var _ sqlbase.Dialect = Dialect{}

// Check returns a *sqlbase.ParamError for a parameter ncruces would
// refuse (a _txlock it does not know) or silently ignore (an underscore
// parameter it does not read), for a _pragma that is empty or holds more
// than one statement (cleolease reads each as one PRAGMA), for a
// plain file name followed by '?' (ncruces reads parameters only from a
// file: URI, and SQLite would open a file named after the whole DSN), and
// for what SQLite refuses in a file: URI (a foreign authority, an unknown
// mode or cache). A URI that url.Parse or url.ParseQuery refuses is
// their error, as ncruces's.
func (Dialect) Check(dsn string) error {
	if !strings.HasPrefix(dsn, "file:") {
		if i := strings.IndexByte(dsn, '?'); i >= 0 {
			key, _, _ := strings.Cut(dsn[i+1:], "=")
			key, _, _ = strings.Cut(key, "&")
			return &sqlbase.ParamError{Param: key, Reason: "ncruces reads parameters only from a file: URI: SQLite would open a file named after the whole DSN (write file:" + dsn + ")"}
		}
		return nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return err
	}
	_, opts, err := sqlbase.ParseURI(dsn)
	if err != nil {
		return err
	}
	for _, o := range opts {
		switch {
		case o[0] == "mode" && !slices.Contains([]string{"ro", "rw", "rwc", "memory"}, o[1]):
			return &sqlbase.ParamError{Param: "mode", Value: o[1], Reason: "SQLite refuses it: expecting ro, rw, rwc or memory"}
		case o[0] == "cache" && o[1] != "shared" && o[1] != "private":
			return &sqlbase.ParamError{Param: "cache", Value: o[1], Reason: "SQLite refuses it: expecting shared or private"}
		}
	}
	// A VFS of the application's (vfs=adiantum, …) may read PRAGMAs
	// SQLite does not know (SQLITE_FCNTL_PRAGMA): the names are checked
	// only on ncruces's default VFS and memdb.
	ownVFS := false
	for _, o := range opts {
		if o[0] == "vfs" && o[1] != "" && o[1] != "memdb" {
			ownVFS = true
		}
	}
	for key, vals := range q {
		if strings.HasPrefix(key, "_") && !ncrucesParams[key] {
			return &sqlbase.ParamError{Param: key, Reason: "ncruces ignores this parameter (a typo?)"}
		}
		for _, v := range vals {
			switch key {
			case "_txlock":
				if !slices.Contains([]string{"", "deferred", "concurrent", "immediate", "exclusive"}, v) {
					return &sqlbase.ParamError{Param: key, Value: v, Reason: "ncruces refuses it: expecting deferred, concurrent, immediate or exclusive"}
				}
			case "_pragma":
				if err := checkPragma(v, ownVFS); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkPragma checks a _pragma value: one PRAGMA statement, of a name
// SQLite or ncruces's default VFS knows unless ownVFS. Errors name the
// PRAGMA, never its argument.
func checkPragma(val string, ownVFS bool) error {
	p, ok := sqlbase.ParsePragma(val)
	switch {
	case strings.TrimSpace(val) == "":
		return &sqlbase.ParamError{Param: "_pragma", Reason: "empty: SQLite cannot run a bare PRAGMA ;"}
	case !ok:
		return &sqlbase.ParamError{Param: "_pragma", Value: p.Name, Reason: "not one PRAGMA statement, name(value) or name=value: ncruces runs it as SQL text, and cleolease reads each _pragma as one PRAGMA"}
	}
	if known := knownPragmas(); !ownVFS && known != nil && !known[p.Name] && !vfsPragmas[p.Name] {
		return &sqlbase.ParamError{Param: "_pragma", Value: p.Name, Reason: "no PRAGMA of SQLite's has this name (SQLite ignores unknown PRAGMAs: a typo?)"}
	}
	return nil
}

// vfsPragmas are the PRAGMAs ncruces's default VFS answers itself
// (vfs/cksm.go: the checksum VFS it wraps every file in).
var vfsPragmas = map[string]bool{"checksum_verification": true}

// knownPragmas returns the names of the PRAGMAs of ncruces's SQLite
// (PRAGMA pragma_list, asked once of an in-memory database), or nil when
// it cannot tell.
var knownPragmas = sync.OnceValue(func() map[string]bool {
	c, err := sqlite3.Open(":memory:")
	if err != nil {
		return nil
	}
	defer c.Close()
	st, _, err := c.Prepare("PRAGMA pragma_list")
	if err != nil {
		return nil
	}
	defer st.Close()
	names := map[string]bool{}
	for st.Step() {
		names[strings.ToLower(st.ColumnText(0))] = true
	}
	if st.Err() != nil || len(names) == 0 {
		return nil
	}
	return names
})

// pragmas returns the _pragma values of dsn that parse, in the order
// ncruces runs them; nil for a plain file name.
func pragmas(dsn string) []sqlbase.Pragma {
	if !strings.HasPrefix(dsn, "file:") {
		return nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil
	}
	var ps []sqlbase.Pragma
	for _, v := range u.Query()["_pragma"] {
		if p, ok := sqlbase.ParsePragma(v); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// setting returns the value the last _pragma of dsn setting the main
// database's PRAGMA name gives it, and whether one does.
func setting(dsn, name string) (value string, ok bool) {
	for _, p := range pragmas(dsn) {
		if p.Name == name && p.Set && p.Main() {
			value, ok = p.Value, true
		}
	}
	return value, ok
}

// sets reports whether a _pragma of dsn gives the PRAGMA name a value (in
// any schema).
func sets(dsn, name string) bool {
	return slices.ContainsFunc(pragmas(dsn), func(p sqlbase.Pragma) bool { return p.Name == name && p.Set })
}

// Target reports what dsn opens: Path as SQLite sees it (the whole plain
// name, or a file: URI's decoded path), Memory and Shared (only a memdb
// name starting with '/': ncruces's SQLite is built without shared cache,
// SQLITE_OMIT_SHARED_CACHE, and every connection runs its own instance of
// it, so file::memory:?cache=shared opens a private database), ReadOnly
// (mode=ro or immutable=1, or a _pragma setting query_only), VFS (the
// URI's vfs), NoLock (nolock=1) and Locking (a _pragma setting the main
// database's locking_mode, LockingParam "_pragma").
func (Dialect) Target(dsn string) (sqlbase.Target, error) {
	var t sqlbase.Target
	if v, ok := setting(dsn, "query_only"); ok && sqlbase.URIBool(v) {
		t.ReadOnly = true
	}
	if v, _ := setting(dsn, "locking_mode"); strings.EqualFold(v, "EXCLUSIVE") || strings.EqualFold(v, "NORMAL") {
		t.Locking, t.LockingParam = strings.ToUpper(v), "_pragma"
	}
	if !strings.HasPrefix(dsn, "file:") {
		t.Path = dsn
		t.Memory = dsn == ":memory:"
		return t, nil
	}
	path, opts, err := sqlbase.ParseURI(dsn)
	if err != nil {
		return t, err
	}
	t.Path = path
	var mode, immutable, nolock string
	haveImmutable, haveNolock := false, false
	for _, o := range opts {
		switch o[0] {
		case "nolock":
			if !haveNolock { // sqlite3_uri_boolean reads the first
				nolock, haveNolock = o[1], true
			}
		case "vfs":
			t.VFS = o[1]
		case "mode":
			mode = o[1] // SQLite applies every occurrence: the last wins
		case "immutable":
			if !haveImmutable {
				immutable, haveImmutable = o[1], true
			}
		}
	}
	t.ReadOnly = t.ReadOnly || mode == "ro" || sqlbase.URIBool(immutable)
	t.NoLock = sqlbase.URIBool(nolock)
	switch {
	case path == ":memory:" || mode == "memory":
		t.Memory = true
		// cache=shared shares nothing (no shared cache in ncruces's build)
	case t.VFS == "memdb":
		t.Memory = true
		t.Shared = sqlbase.MemdbShared(path)
	}
	return t, nil
}

// WithDefaults returns dsn with the defaults it does not set with a
// _pragma of its own: _pragma=busy_timeout(30000), _pragma=synchronous(NORMAL),
// _pragma=foreign_keys(1) and, when onDisk and dsn opens a writable file
// (not in memory, not the temporary database, not read-only),
// _pragma=journal_mode(WAL) — except in a build with the tag
// sqlite3_dotlk, whose WAL index ncruces shares within one process only
// (its vfs/shm_dotlk.go), so that a second process could not write: there
// the rollback journal stays. They follow a file: URI's query. A plain file
// name (ncruces reads no parameter of one) becomes the file: URI of the
// same file first, its reserved characters %-escaped. An empty DSN comes
// back unchanged.
func (d Dialect) WithDefaults(dsn string, onDisk bool) string {
	if dsn == "" {
		return dsn
	}
	t, _ := d.Target(dsn)
	var add []string
	for _, def := range defaults {
		if sets(dsn, def.name) || def.onDisk && (!onDisk || t.Memory || t.ReadOnly || t.Path == "") ||
			def.name == "journal_mode" && !walByDefault {
			continue
		}
		add = append(add, "_pragma="+def.name+"("+def.value+")")
	}
	if len(add) == 0 {
		return dsn
	}
	if !strings.HasPrefix(dsn, "file:") {
		return sqlbase.FileURI(dsn, strings.Join(add, "&"))
	}
	body, frag := dsn, ""
	if i := strings.IndexByte(dsn, '#'); i >= 0 {
		body, frag = dsn[:i], dsn[i:]
	}
	sep := "?"
	if strings.Contains(body, "?") {
		sep = "&"
		if strings.HasSuffix(body, "?") || strings.HasSuffix(body, "&") {
			sep = ""
		}
	}
	return body + sep + strings.Join(add, "&") + frag
}

// JournalMode returns the journal mode the last _pragma setting it gives
// the main database, upper-cased, or "" (none, or a mode SQLite does not
// know).
func (Dialect) JournalMode(dsn string) string {
	v, _ := setting(dsn, "journal_mode")
	v = strings.ToUpper(v)
	switch v {
	case "DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF":
		return v
	}
	return ""
}
