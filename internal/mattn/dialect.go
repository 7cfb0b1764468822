package mattn

// The model of go-sqlite3's and SQLite's own DSN syntax (sqlbase.Dialect):
// which underscore parameters go-sqlite3 v1.14.53 reads, how it and
// SQLite's URI parser turn a DSN into a file name and open flags (Target),
// and the default settings cleolease appends (WithDefaults). The root
// package's FuzzSQLiteDSN checks this model against what go-sqlite3 really
// opens.

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// Dialect is go-sqlite3's DSN language.
type Dialect struct{}

var _ sqlbase.Dialect = Dialect{}

// GoSQLite3Params lists every underscore DSN parameter that
// github.com/mattn/go-sqlite3 v1.14.53 reads (sqlite3.go, (*SQLiteDriver).Open,
// which takes them with url.ParseQuery from everything after the first '?').
// go-sqlite3 silently ignores any other underscore parameter, so cleolease
// rejects one as a probable typo. Keep it sorted (TestParamsSorted) and in
// step with the go-sqlite3 version in go.mod.
var GoSQLite3Params = []string{
	"_auth",
	"_auth_crypt",
	"_auth_pass",
	"_auth_salt",
	"_auth_user",
	"_auto_vacuum",
	"_busy_timeout",
	"_cache_size",
	"_case_sensitive_like",
	"_cslike",
	"_defer_fk",
	"_defer_foreign_keys",
	"_fk",
	"_foreign_keys",
	"_ignore_check_constraints",
	"_journal",
	"_journal_mode",
	"_loc",
	"_locking",
	"_locking_mode",
	"_mutex",
	"_query_only",
	"_recursive_triggers",
	"_rt",
	"_secure_delete",
	"_stmt_cache_size",
	"_sync",
	"_synchronous",
	"_timeout",
	"_txlock",
	"_vacuum",
	"_writable_schema",
}

// IsGoSQLite3Param reports whether go-sqlite3 v1.14.53 reads the underscore
// parameter key.
func IsGoSQLite3Param(key string) bool {
	_, found := slices.BinarySearch(GoSQLite3Params, key)
	return found
}

// Check checks dsn's query (checkQuery) and refuses a DSN whose path
// before '?' is empty: go-sqlite3 v1.14.53 would open a file named after
// the whole DSN and apply none of its parameters. The DSN's values are
// never echoed: they may carry _auth_pass.
func (Dialect) Check(dsn string) error {
	if err := checkQuery(dsn); err != nil {
		return err
	}
	if pathPart, query, ok := strings.Cut(dsn, "?"); ok && pathPart == "" {
		key, _, _ := strings.Cut(query, "=")
		return &sqlbase.ParamError{Param: key, Reason: "the DSN has an empty path before '?': go-sqlite3 would open a file named after the whole DSN and apply none of its parameters"}
	}
	if strings.HasPrefix(dsn, "file:") {
		if _, err := (Dialect{}).Target(dsn); err != nil {
			return err
		}
	}
	return nil
}

// checkQuery checks the query of the DSN go-sqlite3 receives: every
// token must survive go-sqlite3's url.ParseQuery, cleolease's own
// parameters were checked before (api.Validate), and every underscore
// parameter must be one go-sqlite3 v1.14.53 reads.
func checkQuery(dsn string) error {
	_, query, hasQuery := strings.Cut(dsn, "?")
	if !hasQuery {
		return nil
	}
	for _, tok := range strings.Split(query, "&") {
		if tok == "" {
			continue // url.ParseQuery skips empty tokens
		}
		rawKey, rawVal, _ := strings.Cut(tok, "=")
		if strings.Contains(tok, ";") {
			return &sqlbase.ParamError{Param: rawKey, Value: rawVal, Reason: "contains ';', which go-sqlite3's url.ParseQuery rejects"}
		}
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return &sqlbase.ParamError{Param: rawKey, Reason: "bad percent-encoding"}
		}
		if _, err := url.QueryUnescape(rawVal); err != nil {
			return &sqlbase.ParamError{Param: key, Value: rawVal, Reason: "bad percent-encoding"}
		}
		switch {
		case strings.HasPrefix(key, "_") && !IsGoSQLite3Param(key):
			return &sqlbase.ParamError{Param: key, Reason: "unknown to go-sqlite3 v1.14.53, which would silently ignore it"}
		}
	}
	if _, err := url.ParseQuery(query); err != nil {
		return fmt.Errorf("cleolease: go-sqlite3 cannot parse the DSN query: %w", err)
	}
	return nil
}

// Target models go-sqlite3 v1.14.53 Open and SQLite's URI parser
// (sqlite3ParseUri in SQLite 3.54). go-sqlite3 parses the underscore
// parameters and "vfs" from the query of any DSN whose '?' is not its first
// byte, then passes the whole DSN to sqlite3_open_v2 (with SQLITE_OPEN_URI)
// when it starts with "file:" (case-sensitive), and only the part before
// '?' otherwise. SQLite treats a name starting with "file:" as a URI.
func (Dialect) Target(dsn string) (sqlbase.Target, error) {
	var t sqlbase.Target
	queryOnly := false
	name, vfs := dsn, ""
	if pos := strings.IndexByte(dsn, '?'); pos >= 1 {
		if q, err := url.ParseQuery(dsn[pos+1:]); err == nil {
			vfs = q.Get("vfs")
			// go-sqlite3 reads _locking_mode, else _locking, and compares
			// it upper-cased.
			t.Locking, t.LockingParam = q.Get("_locking_mode"), "_locking_mode"
			if t.Locking == "" && !strings.Contains(dsn, "_locking_mode=") {
				t.Locking, t.LockingParam = q.Get("_locking"), "_locking"
			}
			t.Locking = strings.ToUpper(t.Locking)
			// go-sqlite3 sets PRAGMA query_only for these values: the
			// connection cannot write, like mode=ro.
			switch strings.ToLower(q.Get("_query_only")) {
			case "1", "yes", "true", "on":
				queryOnly = true
			}
		}
		if !strings.HasPrefix(dsn, "file:") {
			name = dsn[:pos]
		}
	}
	if !strings.HasPrefix(name, "file:") {
		t.Path = name
		t.VFS = vfs
		t.ReadOnly = queryOnly
		t.Memory = name == ":memory:" || vfs == "memdb"
		t.Shared = name != ":memory:" && sqlbase.MemdbShared(name)
		return t, nil
	}
	path, opts, err := sqlbase.ParseURI(name)
	if err != nil {
		return t, err
	}
	t.Path = path
	var mode, cache string
	immutable, nolock := "", ""
	haveImmutable, haveNolock := false, false
	for _, o := range opts {
		switch o[0] {
		case "nolock":
			if !haveNolock { // sqlite3_uri_boolean reads the first
				nolock, haveNolock = o[1], true
			}
		case "vfs":
			vfs = o[1]
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
	t.ReadOnly = mode == "ro" || sqlbase.URIBool(immutable) || queryOnly
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
	return t, nil
}

// sqliteDefaults are the connection settings every connection gets unless
// the DSN sets one of the go-sqlite3 parameters naming it (aliases
// included): the original implementation's pragma set (README, DSN parameters).
var sqliteDefaults = []struct {
	aliases []string // go-sqlite3 names for the setting; the first is used
	value   string
	onDisk  bool // only for writable on-disk databases
}{
	{[]string{"_busy_timeout", "_timeout"}, "30000", false},
	{[]string{"_journal_mode", "_journal"}, "WAL", true},
	{[]string{"_synchronous", "_sync"}, "NORMAL", false},
	{[]string{"_foreign_keys", "_fk"}, "1", false},
}

// WithDefaults returns dsn followed by the default go-sqlite3 parameters
// it does not set itself under any alias: _busy_timeout=30000,
// _journal_mode=WAL (only when onDisk, and not for read-only or in-memory
// databases: WithDefaults(dsn, false) is what a connection that SQLite
// opens read-only gets), _synchronous=NORMAL and _foreign_keys=1. A
// parameter the DSN gives, even with an empty value, is left to the DSN.
// The caller's bytes are kept; the defaults are appended after '?' or '&'.
// go-sqlite3 v1.14.53 reads these parameters from the query of both plain
// paths (whose query it then strips before calling SQLite) and "file:"
// URIs (which SQLite gets whole and whose unknown parameters it ignores).
// An empty DSN, or one whose path before '?' is empty (go-sqlite3 would
// not read its query), is returned unchanged.
func (d Dialect) WithDefaults(dsn string, onDisk bool) string {
	if dsn == "" || dsn[0] == '?' {
		return dsn
	}
	set := map[string]bool{}
	if _, query, ok := strings.Cut(dsn, "?"); ok {
		q, _ := url.ParseQuery(query)
		for k := range q {
			set[k] = true
		}
	}
	t, _ := d.Target(dsn)
	memory, readOnly := t.Memory, t.ReadOnly
	var b strings.Builder
	b.WriteString(dsn)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
		if strings.HasSuffix(dsn, "?") || strings.HasSuffix(dsn, "&") {
			sep = ""
		}
	}
	for _, d := range sqliteDefaults {
		if slices.ContainsFunc(d.aliases, func(a string) bool { return set[a] }) {
			continue
		}
		if d.onDisk && (!onDisk || memory || readOnly) {
			continue
		}
		b.WriteString(sep)
		sep = "&"
		b.WriteString(d.aliases[0])
		b.WriteByte('=')
		b.WriteString(d.value)
	}
	return b.String()
}

// JournalMode returns the journal mode the DSN sets (_journal_mode or its
// alias _journal), upper-cased, or "" when it sets none.
func (Dialect) JournalMode(dsn string) string {
	_, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return ""
	}
	q, _ := url.ParseQuery(query)
	for _, k := range []string{"_journal_mode", "_journal"} {
		if v, ok := q[k]; ok && len(v) > 0 {
			return strings.ToUpper(v[0])
		}
	}
	return ""
}
