package base

// modernc.org/sqlite v1.62.0's DSN language, as cleolease reads and
// extends it. What modernc does with a DSN (conn.go, newConn; sqlite.go,
// getVFSName, applyDQSConfig, getDefensiveMode, getErrorRcMode,
// applyQueryParams; documented on (*Driver).Open in driver.go):
//
//   - When the DSN has a '?' after its first byte, modernc parses
//     everything after the first '?' with url.ParseQuery (an unparsable
//     query fails the open) and reads the parameters in moderncParams from
//     it. A DSN starting with "file:" (case-sensitive) then goes to
//     sqlite3_open_v2 whole, with SQLITE_OPEN_URI: SQLite applies its own
//     URI parameters (mode, cache, immutable, nolock, psow, modeof, vfs)
//     and ignores the others. Any other DSN is cut at the '?': SQLite gets
//     the plain file name and none of its URI parameters. A DSN starting
//     with '?' is a file name, whole, with no parameters.
//   - The open is always SQLITE_OPEN_READWRITE|SQLITE_OPEN_CREATE|
//     SQLITE_OPEN_FULLMUTEX|SQLITE_OPEN_URI, with vfs as zVfs.
//   - The parameters apply in a fixed order, whatever their order in the
//     DSN: _defensive, _dqs, then _busy_timeout (or _timeout), _auto_vacuum
//     (or _vacuum), the _pragma values (each run as "pragma " + value,
//     busy_timeout first, the others sorted by their lower-cased text),
//     _foreign_keys (_fk), _journal_mode (_journal), _synchronous (_sync),
//     and _query_only last. Of a key and its alias the alias wins, even
//     empty (which then sets nothing). A _pragma is SQL text: "name(value)"
//     and "name=value" both work, and a ';' would run what follows too.
//   - The values of the other keys are checked, and a bad one fails the
//     open: _defensive, _error_rc and differing vfs values before
//     sqlite3_open_v2, the others after it has created the file. Unknown
//     keys are ignored.
//
// SQLite's reading of a "file:" URI is the root module's (internal/sqlbase
// ParseURI, URIBool, MemdbShared), shared by every base.

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// moderncParams lists every query parameter modernc.org/sqlite v1.62.0
// reads from a DSN (sqlite.go). It silently ignores any other, so
// cleolease rejects an underscore parameter not listed as a probable typo.
// Keep it sorted (TestModerncParamsSorted) and in step with the modernc
// version in go.mod.
var moderncParams = []string{
	"_auto_vacuum",
	"_busy_timeout",
	"_defensive",
	"_dqs",
	"_error_rc",
	"_fk",
	"_foreign_keys",
	"_inttotime",
	"_journal",
	"_journal_mode",
	"_pragma",
	"_query_only",
	"_sync",
	"_synchronous",
	"_texttotime",
	"_time_format",
	"_time_integer_format",
	"_timeout",
	"_timezone",
	"_txlock",
	"_vacuum",
	"vfs",
}

// isModerncParam reports whether modernc v1.62.0 reads the parameter key.
func isModerncParam(key string) bool {
	_, found := slices.BinarySearch(moderncParams, key)
	return found
}

// sqliteURIParams are SQLite's own URI parameters (sqlite.org/uri.html),
// which reach SQLite only in a "file:" DSN.
var sqliteURIParams = map[string]bool{
	"cache": true, "immutable": true, "mode": true, "modeof": true, "nolock": true, "psow": true,
}

// shorthands are modernc's keys for the PRAGMAs cleolease reads or sets:
// the key and its alias, and whether modernc runs it before the _pragma
// values (so that a _pragma of the same name wins) or after them.
var shorthands = map[string]struct {
	key, alias string
	first      bool
}{
	"busy_timeout": {"_busy_timeout", "_timeout", true},
	"auto_vacuum":  {"_auto_vacuum", "_vacuum", true},
	"foreign_keys": {"_foreign_keys", "_fk", false},
	"journal_mode": {"_journal_mode", "_journal", false},
	"synchronous":  {"_synchronous", "_sync", false},
	"query_only":   {"_query_only", "", false},
}

// defaults are the settings every connection gets unless its DSN sets
// them (a _pragma of that name, or modernc's key or alias for it).
var defaults = []struct {
	name, value string
	onDisk      bool // only for writable on-disk databases
}{
	{"busy_timeout", "30000", false},
	{"synchronous", "NORMAL", false},
	{"foreign_keys", "1", false},
	{"journal_mode", "WAL", true},
}

// Dialect is modernc.org/sqlite v1.62.0's DSN language: a file name or a
// "file:" URI, with modernc's query parameters (_pragma=name(value),
// repeatable; _txlock, _time_format and the others in moderncParams).
type Dialect struct{}

var _ sqlbase.Dialect = Dialect{}

// Check returns a *sqlbase.ParamError for a parameter modernc would
// refuse (a bad value of one of its keys, differing vfs values, a
// repeated _defensive), or would silently ignore (an underscore parameter
// it does not read; one of SQLite's URI parameters after a plain file
// name, which modernc removes before SQLite sees it), for a _pragma that
// is empty, holds more than one statement (cleolease reads each as one
// PRAGMA) or names no PRAGMA SQLite knows (SQLite ignores unknown ones;
// not checked under a VFS other than SQLite's, which may know its own), and
// for a DSN whose path before '?' is empty (modernc would open a file
// named after the whole DSN). In a "file:" URI, what SQLite refuses (a
// foreign authority, an unknown mode or cache) is a *sqlbase.ParamError
// too.
func (Dialect) Check(dsn string) error {
	pos := strings.IndexByte(dsn, '?')
	isURI := strings.HasPrefix(dsn, "file:")
	if pos == 0 {
		key, _, _ := strings.Cut(dsn[1:], "=")
		key, _, _ = strings.Cut(key, "&")
		return &sqlbase.ParamError{Param: key, Reason: "the DSN has an empty path before '?': modernc would open a file named after the whole DSN and apply none of its parameters"}
	}
	if isURI {
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
	}
	if pos < 0 {
		return nil
	}
	query := dsn[pos+1:]
	// A VFS of the application's may read PRAGMAs SQLite does not know
	// (SQLITE_FCNTL_PRAGMA): their names are checked only on SQLite's own.
	t, _, _ := analyze(dsn)
	ownVFS := t.VFS != "" && t.VFS != "memdb" && !strings.HasPrefix(t.VFS, "unix") && !strings.HasPrefix(t.VFS, "win32")
	for _, tok := range strings.Split(query, "&") {
		if tok == "" {
			continue // url.ParseQuery skips empty tokens
		}
		rawKey, rawVal, _ := strings.Cut(tok, "=")
		if strings.Contains(tok, ";") {
			return &sqlbase.ParamError{Param: rawKey, Reason: "contains ';', which modernc's url.ParseQuery rejects (write it %3B)"}
		}
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return &sqlbase.ParamError{Param: rawKey, Reason: "bad %-escape"}
		}
		val, err := url.QueryUnescape(rawVal)
		if err != nil {
			return &sqlbase.ParamError{Param: key, Reason: "bad %-escape in its value"}
		}
		switch {
		case strings.HasPrefix(key, "_") && !isModerncParam(key):
			return &sqlbase.ParamError{Param: key, Reason: "modernc.org/sqlite ignores this parameter (a typo?)"}
		case !isURI && sqliteURIParams[key]:
			return &sqlbase.ParamError{Param: key, Value: val, Reason: "SQLite's URI parameter after a plain file name: modernc removes the query before SQLite sees it (use a file: URI)"}
		}
		if err := checkValue(key, val, ownVFS); err != nil {
			return err
		}
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("cleolease: modernc cannot parse the DSN query: %w", err)
	}
	if vs := q["vfs"]; len(vs) > 1 && slices.ContainsFunc(vs, func(v string) bool { return v != vs[0] }) {
		return &sqlbase.ParamError{Param: "vfs", Reason: "given with different values, which modernc refuses"}
	}
	if vs := q["_defensive"]; len(vs) > 1 {
		return &sqlbase.ParamError{Param: "_defensive", Reason: "given more than once, which modernc refuses"}
	} else if len(vs) == 1 {
		if on, _ := strconv.ParseBool(vs[0]); on {
			if key, v := pick(q, "journal_mode"); strings.EqualFold(v, "OFF") {
				return &sqlbase.ParamError{Param: key, Value: v, Reason: "cannot take effect under _defensive, which modernc refuses"}
			}
		}
	}
	return nil
}

// checkValue checks the value of one parameter as modernc would
// (sqlite.go, applyQueryParams and the functions before it), and a
// _pragma (checkPragma).
func checkValue(key, val string, ownVFS bool) error {
	bad := func(expect string) error {
		return &sqlbase.ParamError{Param: key, Value: val, Reason: "modernc refuses it: expecting " + expect}
	}
	enum := func(allowed ...string) error {
		if slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, val) }) {
			return nil
		}
		return bad("one of " + strings.Join(allowed, " "))
	}
	parseBool := func() error {
		if _, err := strconv.ParseBool(val); err != nil {
			return bad("a value strconv.ParseBool accepts (1 0 t f true false)")
		}
		return nil
	}
	if val == "" && key != "_defensive" && key != "_pragma" {
		return nil // modernc sets nothing for an empty value
	}
	switch key {
	case "_pragma":
		return checkPragma(val, ownVFS)
	case "_busy_timeout", "_timeout":
		if _, err := strconv.ParseInt(val, 10, 64); err != nil {
			return bad("an integer (milliseconds)")
		}
	case "_auto_vacuum", "_vacuum":
		return enum("0", "NONE", "1", "FULL", "2", "INCREMENTAL")
	case "_foreign_keys", "_fk", "_query_only":
		return enum("0", "1", "false", "true", "no", "yes", "off", "on")
	case "_journal_mode", "_journal":
		return enum("DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF")
	case "_synchronous", "_sync":
		return enum("0", "OFF", "1", "NORMAL", "2", "FULL", "3", "EXTRA")
	case "_txlock":
		return enum("deferred", "immediate", "exclusive")
	case "_time_format":
		if !slices.Contains([]string{"sqlite", "datetime", "string_no_monotonic"}, val) {
			return bad("sqlite, datetime or string_no_monotonic")
		}
	case "_time_integer_format":
		if !slices.Contains([]string{"unix", "unix_milli", "unix_micro", "unix_nano"}, val) {
			return bad("unix, unix_milli, unix_micro or unix_nano")
		}
	case "_timezone":
		if _, err := time.LoadLocation(val); err != nil {
			return bad("a time zone time.LoadLocation knows")
		}
	case "_inttotime", "_texttotime", "_dqs", "_error_rc", "_defensive":
		return parseBool()
	}
	return nil
}

// checkPragma checks a _pragma value: one PRAGMA statement, of a name
// SQLite knows unless ownVFS (a VFS may answer PRAGMAs of its own).
// Errors name the PRAGMA, never its argument.
func checkPragma(val string, ownVFS bool) error {
	p, ok := sqlbase.ParsePragma(val)
	switch {
	case strings.TrimSpace(val) == "":
		return &sqlbase.ParamError{Param: "_pragma", Reason: "empty: SQLite cannot prepare a bare PRAGMA"}
	case !ok:
		return &sqlbase.ParamError{Param: "_pragma", Value: p.Name, Reason: "not one PRAGMA statement, name(value) or name=value: modernc runs it as SQL text, and cleolease reads each _pragma as one PRAGMA"}
	}
	if known := knownPragmas(); !ownVFS && known != nil && !known[p.Name] {
		return &sqlbase.ParamError{Param: "_pragma", Value: p.Name, Reason: "no PRAGMA of SQLite's has this name (SQLite ignores unknown PRAGMAs: a typo?)"}
	}
	return nil
}

// knownPragmas returns the names of the PRAGMAs of the SQLite modernc
// bundles (PRAGMA pragma_list, asked once of an in-memory database on a
// driver with no registrations), or nil when it cannot tell.
var knownPragmas = sync.OnceValue(func() map[string]bool {
	c, err := (&sqlite.Driver{}).Open(":memory:")
	if err != nil {
		return nil
	}
	defer c.Close()
	qc, ok := c.(sqlbase.Conn)
	if !ok {
		return nil
	}
	rows, err := qc.QueryContext(context.Background(), "PRAGMA pragma_list", nil)
	if err != nil {
		return nil
	}
	defer rows.Close()
	names := map[string]bool{}
	v := make([]driver.Value, 1)
	for rows.Next(v) == nil {
		if s, ok := v[0].(string); ok {
			names[strings.ToLower(s)] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	return names
})

// pragmas returns the _pragma values of q that parse, in the order modernc
// runs them: busy_timeout first, the others by their lower-cased text
// (sqlite.go, applyQueryParams).
func pragmas(q url.Values) []sqlbase.Pragma {
	var ps []sqlbase.Pragma
	for _, v := range q["_pragma"] {
		if p, ok := sqlbase.ParsePragma(v); ok {
			ps = append(ps, p)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool {
		x, y := ps[i].Text, ps[j].Text
		if strings.HasPrefix(x, "busy_timeout") {
			return !strings.HasPrefix(y, "busy_timeout")
		}
		if strings.HasPrefix(y, "busy_timeout") {
			return false
		}
		return x < y
	})
	return ps
}

// pick returns modernc's key for the PRAGMA name (shorthands) that q
// gives, the alias winning over the key, and its value; "" when q gives
// neither.
func pick(q url.Values, name string) (key, val string) {
	sh, ok := shorthands[name]
	if !ok {
		return "", ""
	}
	for _, k := range []string{sh.key, sh.alias} {
		if _, ok := q[k]; ok && k != "" {
			key, val = k, q.Get(k)
		}
	}
	return key, val
}

// setting returns the value q leaves the main database's PRAGMA name at:
// of the _pragma values setting it the last modernc runs, and modernc's
// own key for it (non-empty) when that runs after the _pragma values or
// no _pragma sets it. param is the parameter that set it; "" when none
// does.
func setting(q url.Values, name string) (value, param string) {
	for _, p := range pragmas(q) {
		if p.Name == name && p.Set && p.Main() {
			value, param = p.Value, "_pragma"
		}
	}
	if key, v := pick(q, name); v != "" && (param == "" || !shorthands[name].first) {
		value, param = v, key
	}
	return value, param
}

// sets reports whether q sets the PRAGMA name under any of modernc's
// names for it: a _pragma giving it a value (any schema), or modernc's key
// or alias, even empty.
func sets(q url.Values, name string) bool {
	if key, _ := pick(q, name); key != "" {
		return true
	}
	return slices.ContainsFunc(pragmas(q), func(p sqlbase.Pragma) bool { return p.Name == name && p.Set })
}

// analyze models modernc's newConn and SQLite's URI parser: the Target of
// dsn and the query modernc reads (nil when it reads none). err reports a
// query modernc cannot parse or a URI SQLite refuses; t is then the best
// guess.
func analyze(dsn string) (t sqlbase.Target, q url.Values, err error) {
	name, vfs := dsn, ""
	if pos := strings.IndexByte(dsn, '?'); pos >= 1 {
		q, err = url.ParseQuery(dsn[pos+1:]) // partial values on error
		if vs := q["vfs"]; len(vs) > 0 {
			vfs = vs[0]
		}
		if !strings.HasPrefix(dsn, "file:") {
			name = dsn[:pos]
		}
	}
	if v, _ := setting(q, "query_only"); sqlbase.URIBool(v) {
		t.ReadOnly = true
	}
	if v, _ := setting(q, "locking_mode"); strings.EqualFold(v, "EXCLUSIVE") || strings.EqualFold(v, "NORMAL") {
		t.Locking, t.LockingParam = strings.ToUpper(v), "_pragma"
	}
	if !strings.HasPrefix(name, "file:") {
		t.Path, t.VFS = name, vfs
		t.Memory = name == ":memory:" || vfs == "memdb"
		t.Shared = name != ":memory:" && vfs == "memdb" && sqlbase.MemdbShared(name)
		return t, q, err
	}
	path, opts, uerr := sqlbase.ParseURI(name)
	if uerr != nil {
		return t, q, uerr
	}
	t.Path = path
	var mode, cache, immutable, nolock string
	haveImmutable, haveNolock := false, false
	for _, o := range opts {
		switch o[0] {
		case "nolock":
			if !haveNolock { // sqlite3_uri_boolean reads the first
				nolock, haveNolock = o[1], true
			}
		case "vfs":
			vfs = o[1] // SQLite's URI value replaces zVfs
		case "mode":
			mode = o[1] // SQLite applies every occurrence: the last wins
		case "cache":
			cache = o[1]
		case "immutable":
			if !haveImmutable { // sqlite3_uri_boolean reads the first
				immutable, haveImmutable = o[1], true
			}
		}
	}
	t.ReadOnly = t.ReadOnly || mode == "ro" || sqlbase.URIBool(immutable)
	t.NoLock = sqlbase.URIBool(nolock)
	t.VFS = vfs
	switch {
	case path == ":memory:" || mode == "memory":
		t.Memory = true
		t.Shared = cache == "shared"
	case vfs == "memdb":
		t.Memory = true
		t.Shared = sqlbase.MemdbShared(path)
	}
	return t, q, err
}

// Target reports what dsn opens: Path as SQLite sees it (a plain name
// before '?', or a file: URI's decoded path), Memory and Shared, ReadOnly
// (mode=ro or immutable=1 in a file: URI, or query_only set by _query_only
// or a _pragma), VFS (the URI's vfs, else modernc's vfs parameter),
// NoLock (nolock=1 in a file: URI) and Locking (a _pragma setting
// locking_mode of the main database, LockingParam "_pragma"; modernc has
// no key of its own for it).
func (Dialect) Target(dsn string) (sqlbase.Target, error) {
	t, _, err := analyze(dsn)
	return t, err
}

// WithDefaults returns dsn followed by the defaults it does not set
// itself under any of modernc's names for them (sets):
// _pragma=busy_timeout(30000), _pragma=synchronous(NORMAL),
// _pragma=foreign_keys(1) and, when onDisk and dsn opens a writable file
// (not in memory, not the temporary database, not read-only),
// _pragma=journal_mode(WAL). The caller's bytes are kept; the defaults
// follow '?' or '&'. An empty DSN, or one starting with '?' (modernc would
// read no parameter of it), comes back unchanged.
func (Dialect) WithDefaults(dsn string, onDisk bool) string {
	if dsn == "" || dsn[0] == '?' {
		return dsn
	}
	t, q, _ := analyze(dsn)
	var b strings.Builder
	b.WriteString(dsn)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
		if strings.HasSuffix(dsn, "?") || strings.HasSuffix(dsn, "&") {
			sep = ""
		}
	}
	for _, d := range defaults {
		if sets(q, d.name) || d.onDisk && (!onDisk || t.Memory || t.ReadOnly || t.Path == "") {
			continue
		}
		b.WriteString(sep)
		sep = "&"
		b.WriteString("_pragma=" + d.name + "(" + d.value + ")")
	}
	return b.String()
}

// JournalMode returns the journal mode dsn sets for the main database,
// upper-cased, or "": modernc's _journal_mode (or _journal), which runs
// after the _pragma values, else the last _pragma=journal_mode(...) modernc
// runs. A mode SQLite does not know sets nothing.
func (Dialect) JournalMode(dsn string) string {
	_, q, _ := analyze(dsn)
	v, _ := setting(q, "journal_mode")
	v = strings.ToUpper(v)
	switch v {
	case "DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF":
		return v
	}
	return ""
}
