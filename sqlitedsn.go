package cleolease

// The model of go-sqlite3's and SQLite's own DSN syntax: which underscore
// parameters go-sqlite3 v1.14.53 reads, how it and SQLite's URI parser turn
// a DSN into a file name and open flags (analyzeDSN), the DSNs under which
// a lease cannot work (private databases, lockless settings), and the
// default pragmas cleolease appends. dsn.go owns cleolease's own
// parameters; FuzzSQLiteDSN checks this model against what go-sqlite3
// really opens.

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// goSQLite3Params lists every underscore DSN parameter that
// github.com/mattn/go-sqlite3 v1.14.53 reads (sqlite3.go, (*SQLiteDriver).Open,
// which takes them with url.ParseQuery from everything after the first '?').
// go-sqlite3 silently ignores any other underscore parameter, so cleolease
// rejects one as a probable typo. Keep it sorted (TestParamsSorted) and in
// step with the go-sqlite3 version in go.mod.
var goSQLite3Params = []string{
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

// isGoSQLite3Param reports whether go-sqlite3 v1.14.53 reads the underscore
// parameter key.
func isGoSQLite3Param(key string) bool {
	_, found := slices.BinarySearch(goSQLite3Params, key)
	return found
}

// lockless are the VFSes that take no file locks (unix-none, win32-none)
// or keep them for the connection's life (unix-excl).
var lockless = map[string]string{
	"unix-none":  "takes no file locks",
	"win32-none": "takes no file locks",
	"unix-excl":  "keeps an exclusive lock on the file for the connection's life",
}

// checkLockable refuses the DSN settings under which no lease can work
// across processes: exclusive locking mode (SQLite keeps its locks after
// each transaction, so other processes stall), nolock=1 and the lockless
// VFSes (nothing keeps two processes' writes apart). _lease_mode=off
// allows them.
func checkLockable(dsn string) error {
	t, err := analyzeDSN(dsn)
	if err != nil {
		return nil // checkPrivate reported what it could
	}
	const off = "; the writer lease needs SQLite's file locks across processes (_lease_mode=off allows it)"
	switch {
	case t.locking == "EXCLUSIVE":
		p := "_locking_mode"
		if !strings.Contains(dsn, "_locking_mode=") {
			p = "_locking"
		}
		return &DSNError{Param: p, Value: "EXCLUSIVE", Reason: "exclusive locking mode keeps SQLite's locks after each transaction and stalls every other process" + off}
	case t.nolock:
		return &DSNError{Param: "nolock", Value: "1", Reason: "SQLite takes no file locks" + off}
	case lockless[t.vfs] != "":
		return &DSNError{Param: "vfs", Value: t.vfs, Reason: "this VFS " + lockless[t.vfs] + off}
	}
	return nil
}

// checkSQLiteQuery checks the query of the DSN go-sqlite3 receives: every
// token must survive go-sqlite3's url.ParseQuery, cleolease's own
// parameters must not be there (go-sqlite3 would ignore them), and every
// underscore parameter must be one go-sqlite3 v1.14.53 reads.
func checkSQLiteQuery(dsn string) error {
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
			return &DSNError{Param: rawKey, Value: rawVal, Reason: "contains ';', which go-sqlite3's url.ParseQuery rejects"}
		}
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return &DSNError{Param: rawKey, Reason: reasonEscape}
		}
		if _, err := url.QueryUnescape(rawVal); err != nil {
			return &DSNError{Param: key, Value: rawVal, Reason: reasonEscape}
		}
		switch {
		case isLeaseKey(key):
			return &DSNError{Param: key, Reason: "a cleolease parameter in Config.SQLiteDSN; set the Config field instead"}
		case strings.HasPrefix(key, "_") && !isGoSQLite3Param(key):
			return &DSNError{Param: key, Reason: reasonUnknownGo}
		}
	}
	if _, err := url.ParseQuery(query); err != nil {
		return fmt.Errorf("cleolease: go-sqlite3 cannot parse the DSN query: %w", err)
	}
	return nil
}

// checkPrivate checks a Config whose DSN opens a private database: one in
// memory (":memory:", mode=memory without cache=shared, a memdb name not
// starting with '/') or the temporary on-disk database SQLite opens for an
// empty file name (the empty DSN included). No other process can reach
// such a database, so there is nothing to lease and it opens exactly as
// with go-sqlite3; but migrations (_migrations, Config.MigrationsFS,
// Config.Migrator) would land on the migrations' own connection, a
// database nobody else sees, and are refused with an error matching
// ErrPrivateMemory. A DSN whose path before '?' is empty is refused with a
// *DSNError: go-sqlite3 v1.14.53 would open a file named after the whole
// DSN and apply none of its parameters.
func (c *Config) checkPrivate() error {
	dsn := c.SQLiteDSN
	if dsn == "" {
		return c.checkPrivateMigrations("the DSN is empty: SQLite opens a private temporary on-disk database")
	}
	pathPart, query, _ := strings.Cut(dsn, "?")
	if pathPart == "" {
		// The DSN's values are never echoed: they may carry _auth_pass.
		key, _, _ := strings.Cut(query, "=")
		return &DSNError{Param: key, Reason: "the DSN has an empty path before '?': go-sqlite3 would open a file named after the whole DSN and apply none of its parameters"}
	}
	t, err := analyzeDSN(dsn)
	if err != nil {
		return err
	}
	switch {
	case t.path == "":
		return c.checkPrivateMigrations(fmt.Sprintf("DSN %q has an empty path: SQLite opens a private temporary database", pathPart))
	case t.private():
		return c.checkPrivateMigrations(fmt.Sprintf("DSN path %q", pathPart))
	}
	return nil
}

// checkPrivateMigrations refuses migrations on a private database, saying
// which (what).
func (c *Config) checkPrivateMigrations(what string) error {
	if c.Migrations == "" && c.MigrationsFS == nil && c.Migrator == nil {
		return nil
	}
	return fmt.Errorf("%w (%s; its migrations would run on a connection of their own, which no other connection sees)", ErrPrivateMemory, what)
}

// sqliteTarget is what a DSN makes go-sqlite3 and SQLite open.
type sqliteTarget struct {
	path     string // file name as SQLite sees it (URI decoded), not resolved
	memory   bool   // an in-memory database (":memory:", mode=memory, vfs=memdb)
	shared   bool   // reachable by every connection of the process under path
	readOnly bool   // mode=ro or immutable=1 in a file: URI, or _query_only=1
	vfs      string // the VFS named by the query or the URI, "" for the default
	nolock   bool   // nolock=1 in a file: URI
	locking  string // go-sqlite3's _locking_mode (or _locking), upper-cased
	// queryOnly: go-sqlite3's _query_only is true; counted in readOnly.
	queryOnly bool
}

// private reports a database that only the connection opening it can
// reach: a temporary one (empty path) or an in-memory one not shared.
func (t sqliteTarget) private() bool {
	return t.path == "" || (t.memory && !t.shared)
}

// analyzeDSN models go-sqlite3 v1.14.53 Open and SQLite's URI parser
// (sqlite3ParseUri in SQLite 3.54). go-sqlite3 parses the underscore
// parameters and "vfs" from the query of any DSN whose '?' is not its first
// byte, then passes the whole DSN to sqlite3_open_v2 (with SQLITE_OPEN_URI)
// when it starts with "file:" (case-sensitive), and only the part before
// '?' otherwise. SQLite treats a name starting with "file:" as a URI.
func analyzeDSN(dsn string) (sqliteTarget, error) {
	var t sqliteTarget
	name, vfs := dsn, ""
	if pos := strings.IndexByte(dsn, '?'); pos >= 1 {
		if q, err := url.ParseQuery(dsn[pos+1:]); err == nil {
			vfs = q.Get("vfs")
			// go-sqlite3 reads _locking_mode, else _locking, and compares
			// it upper-cased.
			t.locking = q.Get("_locking_mode")
			if t.locking == "" {
				t.locking = q.Get("_locking")
			}
			t.locking = strings.ToUpper(t.locking)
			// go-sqlite3 sets PRAGMA query_only for these values: the
			// connection cannot write, like mode=ro.
			switch strings.ToLower(q.Get("_query_only")) {
			case "1", "yes", "true", "on":
				t.queryOnly = true
			}
		}
		if !strings.HasPrefix(dsn, "file:") {
			name = dsn[:pos]
		}
	}
	if !strings.HasPrefix(name, "file:") {
		t.path = name
		t.vfs = vfs
		t.readOnly = t.queryOnly
		t.memory = name == ":memory:" || vfs == "memdb"
		t.shared = name != ":memory:" && memdbShared(name)
		return t, nil
	}
	path, opts, err := parseSQLiteURI(name)
	if err != nil {
		return t, err
	}
	t.path = path
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
	t.readOnly = mode == "ro" || sqliteBool(immutable) || t.queryOnly
	t.nolock = sqliteBool(nolock)
	t.vfs = vfs
	switch {
	case path == ":memory:" || mode == "memory":
		t.memory = true
		t.shared = cache == "shared"
	case vfs == "memdb":
		t.memory = true
		t.shared = memdbShared(path)
	}
	return t, nil
}

// memdbShared reports whether SQLite's memdb VFS shares a database called
// name between connections (names of two or more bytes starting with '/').
func memdbShared(name string) bool {
	return len(name) > 1 && (name[0] == '/' || name[0] == '\\')
}

// sqliteBool is sqlite3_uri_boolean's reading of a value (default false).
func sqliteBool(v string) bool {
	if v != "" && '0' <= v[0] && v[0] <= '9' {
		n := 0
		for i := 0; i < len(v) && '0' <= v[i] && v[i] <= '9' && n < 1<<20; i++ {
			n = n*10 + int(v[i]-'0')
		}
		return n != 0
	}
	switch strings.ToLower(v) {
	case "on", "yes", "true":
		return true
	}
	return false
}

// parseSQLiteURI decodes a "file:" URI the way sqlite3ParseUri does without
// SQLITE_ALLOW_URI_AUTHORITY (go-sqlite3's default build): an authority
// ("file://host/…") must be empty or "localhost"; the path ends at '?' or
// '#'; the query ends at '#'; %HH escapes are decoded in path, names and
// values ('+' is not a space), "%00" drops the rest of its part, and an
// option with an empty name is skipped. It returns the path and the
// (name, value) options in order.
func parseSQLiteURI(uri string) (path string, opts [][2]string, err error) {
	n := len(uri)
	in := len("file:")
	if strings.HasPrefix(uri[in:], "//") {
		in += 2
		end := in
		for end < n && uri[end] != '/' {
			end++
		}
		if auth := uri[in:end]; auth != "" && auth != "localhost" {
			return "", nil, &DSNError{Param: "file: URI authority", Value: auth, Reason: `SQLite accepts only an empty authority or "localhost" (file:///abs/path or file:rel/path)`}
		}
		in = end
	}
	// out mirrors SQLite's zFile buffer: NUL-separated path, names, values.
	out := make([]byte, 0, n)
	last := func() byte {
		if len(out) == 0 {
			return 0 // SQLite's buffer is preceded by NULs
		}
		return out[len(out)-1]
	}
	state := 0 // 0 path, 1 option name, 2 option value
	for in < n && uri[in] != '#' {
		c := uri[in]
		in++
		switch {
		case c == '%' && in+1 < n && isHex(uri[in]) && isHex(uri[in+1]):
			c = unhex(uri[in])<<4 | unhex(uri[in+1])
			in += 2
			if c == 0 {
				for in < n {
					d := uri[in]
					if d == '#' || (state == 0 && d == '?') ||
						(state == 1 && (d == '=' || d == '&')) ||
						(state == 2 && d == '&') {
						break
					}
					in++
				}
				continue
			}
		case state == 1 && (c == '&' || c == '='):
			if last() == 0 {
				// An empty option name: skip the option.
				for in < n && uri[in] != '#' && uri[in-1] != '&' {
					in++
				}
				continue
			}
			if c == '&' {
				out = append(out, 0)
			} else {
				state = 2
			}
			c = 0
		case (state == 0 && c == '?') || (state == 2 && c == '&'):
			c = 0
			state = 1
		}
		out = append(out, c)
	}
	if state == 1 {
		out = append(out, 0)
	}
	out = append(out, 0, 0, 0, 0)
	next := func(i int) (string, int) {
		j := i
		for out[j] != 0 {
			j++
		}
		return string(out[i:j]), j + 1
	}
	path, i := next(0)
	for i < len(out) && out[i] != 0 {
		var name, val string
		name, i = next(i)
		val, i = next(i)
		opts = append(opts, [2]string{name, val})
	}
	return path, opts, nil
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

func unhex(b byte) byte {
	switch {
	case '0' <= b && b <= '9':
		return b - '0'
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10
	default:
		return b - 'A' + 10
	}
}

// location reports the database SQLiteDSN opens, for the lease engine's
// file identity and for choosing defaults. path is the file name as SQLite
// sees it, not resolved against the working directory: for a plain DSN the
// part before '?', for a "file:" URI its decoded path (authority "//" or
// "//localhost" removed, query and fragment dropped). memory reports an
// in-memory database (":memory:", mode=memory or vfs=memdb); a validated
// Config only has shared ones, named by path. readOnly reports mode=ro or
// immutable=1 in a "file:" URI; for a plain path go-sqlite3 drops the query
// before SQLite sees it, so it is always false there. A DSN that SQLite
// would refuse (a foreign URI authority) yields its best guess.
func (c *Config) location() (path string, memory bool, readOnly bool) {
	t, _ := analyzeDSN(c.SQLiteDSN)
	return t.path, t.memory, t.readOnly
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

// sqliteDSNWithDefaults returns SQLiteDSN followed by the default
// go-sqlite3 parameters it does not set itself under any alias:
// _busy_timeout=30000, _journal_mode=WAL (not for read-only or in-memory
// databases; a connection SQLite opens read-only drops it, readonly.go),
// _synchronous=NORMAL and _foreign_keys=1. A parameter the DSN gives, even
// with an empty value, is left to the DSN. The caller's bytes
// are kept; the defaults are appended after '?' or '&'. go-sqlite3 v1.14.53
// reads these parameters from the query of both plain paths (whose query it
// then strips before calling SQLite) and "file:" URIs (which SQLite gets
// whole and whose unknown parameters it ignores). An empty DSN, or one
// whose path before '?' is empty (go-sqlite3 would not read its query), is
// returned unchanged.
func (c *Config) sqliteDSNWithDefaults() string { return c.sqliteDSN(true) }

// sqliteDSN returns SQLiteDSN with the defaults, the on-disk ones
// (_journal_mode=WAL) only when onDisk: sqliteDSN(false) is what a
// connection that SQLite opens read-only gets (readonly.go).
func (c *Config) sqliteDSN(onDisk bool) string {
	dsn := c.SQLiteDSN
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
	_, memory, readOnly := c.location()
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
