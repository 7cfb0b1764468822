package cleolease

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/migrate"
)

// Mode selects how the writer lease behaves (DSN _lease_mode).
type Mode string

const (
	// ModeOff: pure pass-through; no lease, no lease tables; migrations run
	// without the cold-open lease.
	ModeOff Mode = "off"
	// ModeLocal (default): wait up to Config.Wait for the lease, then proceed
	// without it (a degraded grant: logged at warning level and counted).
	// A cancelled or expired context never becomes a degraded grant.
	ModeLocal Mode = "local"
	// ModeRequire: wait up to Config.Wait, then fail with ErrLeaseUnavailable.
	ModeRequire Mode = "require"
)

// Defaults of the DSN parameters owned by cleolease (README, DSN parameters).
const (
	DefaultScope           = "main"
	DefaultLane            = "default"
	DefaultTTL             = 30 * time.Second
	DefaultWait            = 30 * time.Second
	DefaultPriority        = 100
	DefaultSlice           = 2 * time.Millisecond
	DefaultLinger          = 100 * time.Millisecond
	DefaultMigrationsTable = "schema_migrations"
)

// Config is a parsed cleolease DSN plus what a DSN cannot carry.
//
// In a Config literal, every field left at its zero value takes its
// default (mode local, scope "main", lane "default", DefaultTTL,
// DefaultWait, DefaultPriority, DefaultSlice, DefaultLinger,
// DefaultMigrationsTable), so Config{SQLiteDSN: "file:app.db"} behaves as
// the DSN "file:app.db". To give Wait, Priority, Slice or Linger an explicit
// zero (no wait, the best ordinary priority, strict FIFO, no lingering),
// start from NewConfig (or ParseDSN) and set the field: a Config made by
// either holds every value explicitly and keeps its zeros, as a DSN's
// "_lease_wait=0" does. NewConnector reports a bad field as a *ConfigError
// naming it.
type Config struct {
	// SQLiteDSN is what go-sqlite3 receives: the caller's DSN with the
	// cleolease-owned parameters removed, every other byte unchanged.
	SQLiteDSN string

	Mode     Mode          // _lease_mode
	Scope    string        // _lease_scope: default scope when the context names none
	Lane     string        // _lease_lane: default lane when the context names none
	TTL      time.Duration // _lease_ttl: heartbeat period is TTL/3
	Wait     time.Duration // _lease_wait: longest wait before degrade (local) or error (require)
	Priority int           // _lease_priority: lower is served first
	// Slice (_lease_slice) is how long a holder may keep a lane while more of
	// its own process's work is queued although another process waits; 0 is
	// strict FIFO.
	Slice time.Duration
	// Linger (_lease_linger) is how long an idle holder keeps the lease row
	// while nobody waits, so the next transaction pays no claim.
	Linger time.Duration
	// StealAfterTTL (_lease_steal_after_ttl), an explicit opt-in, lets a
	// waiter take over a lane whose holder is alive but whose heartbeat is
	// older than its TTL (a hung holder). The robbed holder's commits are
	// fenced; its side effects outside the database are not. Default false:
	// a provably live holder is never robbed.
	StealAfterTTL bool
	// NetworkFS (_lease_network_fs) refuses (default; "" means refuse) or
	// allows a database on a network filesystem; see NetworkFSError.
	NetworkFS NetworkFS

	Migrations         string // _migrations: golang-migrate source URL or a registered name
	MigrationsTable    string // _migrations_table
	MigrationsNoTxWrap bool   // _migrations_no_tx_wrap

	// MigrationsFS, when set, is the migration source (golang-migrate iofs
	// layout: NNN_name.up.sql / NNN_name.down.sql at its root).
	MigrationsFS fs.FS
	// Migrator, when set, runs at the cold open under the cold-open lease,
	// after the golang-migrate migrations: another migration tool (ent,
	// goose, atlas) or hand-written DDL; see Migrator. It replaces a
	// Migrator registered under Migrations.
	Migrator Migrator
	// Logger receives lease and migration events; nil is silent.
	Logger *slog.Logger
	// BaseDriver opens the underlying connections (extensions, ConnectHook);
	// nil means a plain &sqlite3.SQLiteDriver{}. It also opens the lease
	// engine's private connection and the migrations' connection, so its
	// ConnectHook sees those too (a hook that sets SQLITE_FCNTL_PERSIST_WAL
	// or registers a collation an index needs then holds everywhere). Every
	// connector on one file in one process must use the same BaseDriver
	// (nil counts as one): Connect fails with ErrBaseDriverMismatch
	// otherwise.
	BaseDriver *sqlite3.SQLiteDriver
	// Clock is the lease engine's wall clock; nil means lease.SystemClock.
	Clock lease.Clock

	// explicit is set by NewConfig (so by ParseDSN): every field holds its
	// value explicitly, zeros included. A literal leaves it false, and its
	// zero fields take the defaults (applyDefaults, config.go).
	explicit bool
}

// NewConfig returns a Config holding every default explicitly: mode
// local, scope "main", lane "default", the default TTL, wait, priority,
// slice and linger, and the "schema_migrations" version table. SQLiteDSN is
// empty; set it before use. Unlike a Config literal's, its fields keep a
// zero set on them (Wait = 0 means no wait).
func NewConfig() *Config {
	return &Config{
		explicit:        true,
		Mode:            ModeLocal,
		Scope:           DefaultScope,
		Lane:            DefaultLane,
		TTL:             DefaultTTL,
		Wait:            DefaultWait,
		Priority:        DefaultPriority,
		Slice:           DefaultSlice,
		Linger:          DefaultLinger,
		NetworkFS:       NetworkFSRefuse,
		MigrationsTable: DefaultMigrationsTable,
	}
}

// Clone returns a shallow copy of c. The migrations fs.FS, the logger, the
// base driver and the clock are shared with c, not copied.
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

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

// isLeaseKey reports whether a DSN parameter name is in the namespace that
// cleolease owns: "_lease_…" or "_migrations…".
func isLeaseKey(key string) bool {
	return strings.HasPrefix(key, "_lease_") || strings.HasPrefix(key, "_migrations")
}

// leaseParam is one DSN parameter owned by cleolease. set parses and checks
// a (percent-decoded) value into c and returns "" or a short reason for
// rejecting it; get formats c's field so that set accepts it back.
type leaseParam struct {
	name string
	set  func(c *Config, v string) (reason string)
	get  func(c *Config) string
}

// Reasons shared by several parameters.
const (
	reasonEmpty       = "must not be empty"
	reasonDuration    = "not a Go duration"
	reasonNegative    = "must not be negative"
	reasonUnknownOurs = "unknown cleolease parameter"
	reasonRepeated    = "given more than once"
	reasonUnknownGo   = "unknown to go-sqlite3 v1.14.53, which would silently ignore it"
	reasonEscape      = "bad percent-encoding"
)

// leaseParams are the DSN parameters cleolease owns, sorted by name
// (TestParamsSorted); FormatDSN writes them in this order.
var leaseParams = []leaseParam{
	{"_lease_lane", func(c *Config, v string) string {
		return setNonEmpty(&c.Lane, v)
	}, func(c *Config) string { return c.Lane }},
	{"_lease_linger", func(c *Config, v string) string {
		return setNonNegative(&c.Linger, v)
	}, func(c *Config) string { return c.Linger.String() }},
	{"_lease_mode", func(c *Config, v string) string {
		switch m := Mode(v); m {
		case ModeOff, ModeLocal, ModeRequire:
			c.Mode = m
			return ""
		}
		return "must be off, local or require"
	}, func(c *Config) string { return string(c.Mode) }},
	{"_lease_network_fs", func(c *Config, v string) string {
		switch p := NetworkFS(v); p {
		case NetworkFSAllow, NetworkFSRefuse:
			c.NetworkFS = p
			return ""
		}
		return "must be allow or refuse"
	}, func(c *Config) string {
		if c.NetworkFS == "" {
			return string(NetworkFSRefuse)
		}
		return string(c.NetworkFS)
	}},
	{"_lease_priority", func(c *Config, v string) string {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return "not a 32-bit integer"
		}
		c.Priority = int(n)
		return ""
	}, func(c *Config) string { return strconv.Itoa(c.Priority) }},
	{"_lease_scope", func(c *Config, v string) string {
		return setNonEmpty(&c.Scope, v)
	}, func(c *Config) string { return c.Scope }},
	{"_lease_slice", func(c *Config, v string) string {
		return setNonNegative(&c.Slice, v)
	}, func(c *Config) string { return c.Slice.String() }},
	{"_lease_steal_after_ttl", func(c *Config, v string) string {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "not a boolean"
		}
		c.StealAfterTTL = b
		return ""
	}, func(c *Config) string { return strconv.FormatBool(c.StealAfterTTL) }},
	{"_lease_ttl", func(c *Config, v string) string {
		d, err := time.ParseDuration(v)
		if err != nil {
			return reasonDuration
		}
		if d <= 0 {
			return "must be positive"
		}
		c.TTL = d
		return ""
	}, func(c *Config) string { return c.TTL.String() }},
	{"_lease_wait", func(c *Config, v string) string {
		return setNonNegative(&c.Wait, v)
	}, func(c *Config) string { return c.Wait.String() }},
	{"_migrations", func(c *Config, v string) string {
		return setNonEmpty(&c.Migrations, v)
	}, func(c *Config) string { return c.Migrations }},
	{"_migrations_no_tx_wrap", func(c *Config, v string) string {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "not a boolean"
		}
		c.MigrationsNoTxWrap = b
		return ""
	}, func(c *Config) string { return strconv.FormatBool(c.MigrationsNoTxWrap) }},
	{"_migrations_table", func(c *Config, v string) string {
		if !migrate.ValidTableName(v) {
			return "not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*)"
		}
		c.MigrationsTable = v
		return ""
	}, func(c *Config) string {
		if c.MigrationsTable == "" {
			return DefaultMigrationsTable // validate fills it in
		}
		return c.MigrationsTable
	}},
}

// lookupLeaseParam returns the cleolease parameter called name, or nil.
func lookupLeaseParam(name string) *leaseParam {
	i, found := slices.BinarySearchFunc(leaseParams, name, func(p leaseParam, name string) int {
		return strings.Compare(p.name, name)
	})
	if !found {
		return nil
	}
	return &leaseParams[i]
}

func setNonEmpty(dst *string, v string) string {
	if v == "" {
		return reasonEmpty
	}
	*dst = v
	return ""
}

func setNonNegative(dst *time.Duration, v string) string {
	d, err := time.ParseDuration(v)
	if err != nil {
		return reasonDuration
	}
	if d < 0 {
		return reasonNegative
	}
	*dst = d
	return ""
}

// ParseDSN parses a cleolease DSN: a go-sqlite3 DSN (a plain path or a
// "file:" URI) whose query may also carry the parameters cleolease owns
// (those starting "_lease_" or "_migrations").
//
// The query (everything after the first '?') is split on '&'; each name and
// value is percent-decoded with url.QueryUnescape. cleolease's parameters
// are removed and applied to the Config; every other byte is kept, in
// order, in Config.SQLiteDSN (the '?' too, unless nothing is left after it).
//
// ParseDSN returns a *DSNError for an unknown cleolease parameter, one given
// twice, a value that does not parse, or an underscore parameter go-sqlite3
// v1.14.53 would silently ignore; and an error matching ErrPrivateMemory
// for a private in-memory or temporary database. The empty DSN is accepted
// here (the connector refuses it when it connects).
func ParseDSN(dsn string) (*Config, error) {
	c := NewConfig()
	path, query, hasQuery := strings.Cut(dsn, "?")
	if !hasQuery {
		c.SQLiteDSN = dsn
	} else {
		var kept []string
		seen := make(map[string]bool)
		for _, tok := range strings.Split(query, "&") {
			rawKey, rawVal, _ := strings.Cut(tok, "=")
			key, err := url.QueryUnescape(rawKey)
			if err != nil {
				return nil, &DSNError{Param: rawKey, Reason: reasonEscape}
			}
			if !isLeaseKey(key) {
				kept = append(kept, tok)
				continue
			}
			p := lookupLeaseParam(key)
			if p == nil {
				return nil, &DSNError{Param: key, Reason: reasonUnknownOurs}
			}
			if seen[key] {
				return nil, &DSNError{Param: key, Reason: reasonRepeated}
			}
			seen[key] = true
			val, err := url.QueryUnescape(rawVal)
			if err != nil {
				return nil, &DSNError{Param: key, Value: rawVal, Reason: reasonEscape}
			}
			if reason := p.set(c, val); reason != "" {
				return nil, &DSNError{Param: key, Value: val, Reason: reason}
			}
		}
		c.SQLiteDSN = path
		if len(kept) > 0 {
			c.SQLiteDSN += "?" + strings.Join(kept, "&")
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// FormatDSN returns a DSN that ParseDSN turns back into c (as far as a DSN
// can carry it): SQLiteDSN unchanged, followed by the cleolease parameters
// whose values differ from NewConfig's, sorted by name, values escaped with
// url.QueryEscape and durations written by time.Duration.String.
func (c *Config) FormatDSN() string {
	c = c.Clone()
	c.applyDefaults()
	def := NewConfig()
	var b strings.Builder
	b.WriteString(c.SQLiteDSN)
	sep := "?"
	if strings.Contains(c.SQLiteDSN, "?") {
		// Always '&', even after a trailing '?' or '&': the empty token it
		// makes is part of SQLiteDSN and ParseDSN keeps it.
		sep = "&"
	}
	for _, p := range leaseParams {
		v := p.get(c)
		if v == p.get(def) {
			continue
		}
		b.WriteString(sep)
		sep = "&"
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(v))
	}
	return b.String()
}

// validate checks a Config, parsed or built by hand, with the rules
// ParseDSN applies, after giving a literal's zero fields their defaults
// (applyDefaults) and filling in an empty MigrationsTable. A bad field is
// reported as a *ConfigError naming the Config field (for example "TTL");
// SQLiteDSN is checked for parameters go-sqlite3 would reject or silently
// ignore (a *DSNError naming the parameter) and for private in-memory
// databases.
func (c *Config) validate() error {
	c.applyDefaults()
	if c.MigrationsTable == "" {
		c.MigrationsTable = DefaultMigrationsTable
	}
	def := NewConfig()
	for _, p := range leaseParams {
		v := p.get(c)
		if v == p.get(def) {
			continue // defaults are valid
		}
		var scratch Config
		if reason := p.set(&scratch, v); reason != "" {
			return &ConfigError{Field: configFields[p.name], Value: v, Reason: reason}
		}
	}
	if err := checkSQLiteQuery(c.SQLiteDSN); err != nil {
		return err
	}
	if err := checkPrivate(c.SQLiteDSN); err != nil {
		return err
	}
	if c.Mode != ModeOff {
		return checkLockable(c.SQLiteDSN)
	}
	return nil
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

// checkPrivate refuses DSNs that give every pooled connection a database
// of its own: a private in-memory database, a temporary database (empty
// path), or an empty path before '?'. The empty DSN passes here; the
// connector refuses it when it connects.
func checkPrivate(dsn string) error {
	if dsn == "" {
		return nil
	}
	pathPart, _, _ := strings.Cut(dsn, "?")
	if pathPart == "" {
		// go-sqlite3 v1.14.53 reads the query only when '?' is at index 1
		// or later; here it would open a file literally named dsn with
		// none of the parameters applied.
		// The DSN's query is never echoed: it may carry _auth_pass.
		return fmt.Errorf("%w (the DSN has an empty path before '?')", ErrPrivateMemory)
	}
	t, err := analyzeDSN(dsn)
	if err != nil {
		return err
	}
	switch {
	case t.path == "":
		return fmt.Errorf("%w (DSN %q has an empty path: SQLite opens a private temporary database)", ErrPrivateMemory, pathPart)
	case t.memory && !t.shared:
		return fmt.Errorf("%w (DSN path %q)", ErrPrivateMemory, pathPart)
	}
	return nil
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
// included): the original implementation's pragma set.
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
// databases), _synchronous=NORMAL and _foreign_keys=1. A parameter the DSN
// gives, even with an empty value, is left to the DSN. The caller's bytes
// are kept; the defaults are appended after '?' or '&'. go-sqlite3 v1.14.53
// reads these parameters from the query of both plain paths (whose query it
// then strips before calling SQLite) and "file:" URIs (which SQLite gets
// whole and whose unknown parameters it ignores). An empty DSN, or one
// whose path before '?' is empty (go-sqlite3 would not read its query), is
// returned unchanged.
func (c *Config) sqliteDSNWithDefaults() string {
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
		if d.onDisk && (memory || readOnly) {
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
