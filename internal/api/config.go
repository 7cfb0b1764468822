package api

import (
	"io/fs"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
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
type Config[D any] struct {
	// SQLiteDSN is what the base driver receives: the caller's DSN with the
	// cleolease-owned parameters removed, every other byte unchanged.
	SQLiteDSN string

	Mode     Mode          // _lease_mode
	Scope    string        // _lease_scope: default scope when the context names none
	Lane     string        // _lease_lane: default lane when the context names none
	TTL      time.Duration // _lease_ttl: heartbeat period is TTL/3
	Wait     time.Duration // _lease_wait: longest wait before degrade (local) or error (require)
	Priority int           // _lease_priority: lower is served first
	// Slice (_lease_slice) is how long a holder may keep a lane for more of
	// its own process's work — queued, or a writer that comes straight back
	// — although another process waits; a turn keeps at least two of its
	// transactions, however long they take. 0 is strict FIFO.
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
	// SidecarDir (_lease_sidecar_dir), when not empty, is the absolute
	// directory holding the liveness files instead of the database's own
	// directory; every process of the file must give the same one. Empty
	// on a LiteFS mount, a local directory is derived and proven shared
	// (sidecardir.go; ErrSidecarDir when processes derived different ones).
	SidecarDir string

	Migrations         string // _migrations: golang-migrate source URL or a registered name
	MigrationsTable    string // _migrations_table
	MigrationsNoTxWrap bool   // _migrations_no_tx_wrap
	// MigrationsReplica (_migrations_replica) is what the first connect
	// does on a LiteFS replica whose database is behind the migrations:
	// open it (ReplicaOpen, the default; "" means open) or wait for the
	// primary's migration to arrive (ReplicaWait).
	MigrationsReplica ReplicaMigrations

	// MigrationsFS, when set, is the migration source (golang-migrate iofs
	// layout: NNN_name.up.sql / NNN_name.down.sql at its root).
	MigrationsFS fs.FS
	// Migrator, when set, runs at the cold open under the cold-open lease,
	// after the golang-migrate migrations: another migration tool (ent,
	// goose, atlas) or hand-written DDL; see Migrator. It replaces a
	// Migrator registered under Migrations.
	Migrator Migrator
	// Logger receives lease and migration events, debug and info included.
	// nil sends warnings and errors (a degraded grant, a database on a FUSE
	// or an allowed network filesystem) to slog.Default(), as it is when
	// each is logged, and drops the rest (logger.go). To silence cleolease,
	// set Quiet, or give a discarding logger: slog.New(slog.DiscardHandler).
	// A file's lease engine, shared by the connectors on it in a process,
	// logs through the logger of the connector that opened it first.
	Logger *slog.Logger
	// Quiet (_lease_quiet) logs nothing: no warning goes to slog.Default(),
	// and Logger is not used.
	Quiet bool
	// BaseDriver opens the underlying connections: the base's own driver
	// value (go-sqlite3's *sqlite3.SQLiteDriver, with its extensions and
	// ConnectHook; modernc's *sqlite.Driver with its connection hooks); nil
	// means a plain one. It also opens the lease
	// engine's private connection and the migrations' connections, so its
	// ConnectHook runs there too, once per connection: what the hook sets
	// for the file or the SQL (SQLITE_FCNTL_PERSIST_WAL, collations and
	// functions an index or a migration needs, limits) holds everywhere.
	// The callbacks it registers (update, commit, rollback and pre-update
	// hooks, authorizer, trace) are then cleared on the engine's connection
	// and on the connection that runs golang-migrate's files (it also
	// carries the lease's fencing and the version table): they never see
	// nor veto the driver's bookkeeping. The Migrator's connection carries
	// only the Migrator's statements and keeps them. Every connector on one
	// file in one process must use the same BaseDriver (nil counts as one):
	// Connect fails with ErrBaseDriverMismatch otherwise.
	BaseDriver D
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
func NewConfig[D any]() *Config[D] {
	c := &Config[D]{explicit: true}
	for _, p := range leaseParams[D]() {
		if p.def != "" {
			p.set(c, p.def)
		}
	}
	return c
}

// Clone returns a shallow copy of c. The migrations fs.FS, the logger, the
// base driver and the clock are shared with c, not copied.
func (c *Config[D]) Clone() *Config[D] {
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

// leaseParam is one DSN parameter owned by cleolease, and the one place
// that says what it is: its name, the Config field holding it, the kind of
// value, its default (as DSN text; "" for none), its documentation (the
// README's table and the package documentation are checked against it by
// TestParamDocs), how to parse and check a value into a Config (set
// returns "" or a short reason for rejecting it) and how to format the
// field back (get).
type leaseParam[D any] struct {
	name  string
	field string
	kind  string
	def   string
	doc   string
	set   func(c *Config[D], v string) (reason string)
	get   func(c *Config[D]) string
}

// Reasons shared by several parameters.
const (
	reasonEmpty       = "must not be empty"
	reasonDuration    = "not a Go duration"
	reasonNegative    = "must not be negative"
	reasonUnknownOurs = "unknown cleolease parameter"
	reasonRepeated    = "given more than once"
	reasonEscape      = "bad percent-encoding"
)

// leaseParams are the DSN parameters cleolease owns, sorted by name
// (TestParamsSorted); FormatDSN writes them in this order. NewConfig
// applies their defaults.
func leaseParams[D any]() []leaseParam[D] {
	return []leaseParam[D]{
		{
			name: "_lease_lane", field: "Lane", kind: "string", def: DefaultLane,
			doc: "lane of writes whose context names none (WithLane)",
			set: func(c *Config[D], v string) string { return setNonEmpty(&c.Lane, v) },
			get: func(c *Config[D]) string { return c.Lane },
		},
		{
			name: "_lease_linger", field: "Linger", kind: "Go duration", def: DefaultLinger.String(),
			doc: "how long an idle holder keeps the lease row while nobody waits, so the next transaction pays no claim; handed over at once when a waiter queues",
			set: func(c *Config[D], v string) string { return setNonNegative(&c.Linger, v) },
			get: func(c *Config[D]) string { return c.Linger.String() },
		},
		{
			name: "_lease_mode", field: "Mode", kind: "`off` \\| `local` \\| `require`", def: string(ModeLocal),
			doc: "`off`: pure pass-through, no lease tables. `local`: after `_lease_wait`, proceed without the lease (a *degraded* grant: logged at warning level and counted; never caused by a cancelled context). `require`: after `_lease_wait`, fail with `ErrLeaseUnavailable`. On a LiteFS mount `local` fails as `require` does.",
			set: func(c *Config[D], v string) string {
				switch m := Mode(v); m {
				case ModeOff, ModeLocal, ModeRequire:
					c.Mode = m
					return ""
				}
				return "must be off, local or require"
			},
			get: func(c *Config[D]) string { return string(c.Mode) },
		},
		{
			name: "_lease_network_fs", field: "NetworkFS", kind: "`refuse` \\| `allow`", def: string(NetworkFSRefuse),
			doc: "a database on a network filesystem (NFS, SMB/CIFS, 9p, AFS, Ceph, Lustre, …) is refused at the first connect with `*NetworkFSError`; `allow` opens it anyway, with a warning, and gives up what the README's \"Beyond one host\" says. `_lease_mode=off` and read-only opens are never refused.",
			set: func(c *Config[D], v string) string {
				switch p := NetworkFS(v); p {
				case NetworkFSAllow, NetworkFSRefuse:
					c.NetworkFS = p
					return ""
				}
				return "must be allow or refuse"
			},
			get: func(c *Config[D]) string {
				if c.NetworkFS == "" {
					return string(NetworkFSRefuse)
				}
				return string(c.NetworkFS)
			},
		},
		{
			name: "_lease_priority", field: "Priority", kind: "integer", def: strconv.Itoa(DefaultPriority),
			doc: "queue priority, **lower is served first** (WithPriority overrides it per call)",
			set: func(c *Config[D], v string) string {
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil {
					return "not a 32-bit integer"
				}
				c.Priority = int(n)
				return ""
			},
			get: func(c *Config[D]) string { return strconv.Itoa(c.Priority) },
		},
		{
			name: "_lease_quiet", field: "Quiet", kind: "bool", def: "false",
			doc: "`true`: log nothing. Otherwise warnings (a degraded grant, naming the file, lane, wait and holder; a FUSE or allowed network filesystem; pending migrations on a read-only file) go to `Config.Logger`, else to `slog.Default()`. A discarding `Config.Logger` (`slog.New(slog.DiscardHandler)`) silences them too.",
			set: func(c *Config[D], v string) string {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return "not a boolean"
				}
				c.Quiet = b
				return ""
			},
			get: func(c *Config[D]) string { return strconv.FormatBool(c.Quiet) },
		},
		{
			name: "_lease_scope", field: "Scope", kind: "string", def: DefaultScope,
			doc: "scope of writes whose context names none (WithLane)",
			set: func(c *Config[D], v string) string { return setNonEmpty(&c.Scope, v) },
			get: func(c *Config[D]) string { return c.Scope },
		},
		{
			name: "_lease_sidecar_dir", field: "SidecarDir", kind: "absolute directory", def: "",
			doc: "where the liveness files live (the sidecar `<db>-cleolease`, or the portable tier's `<db>-cleolease.d`), named after the database's file name and identity, instead of beside the database. Every process that opens the file must give the same directory, or none: each records where it keeps them in the database (table `_writer_sidecar`), and one that finds another place recorded by a process still at work refuses its writes with `ErrSidecarDir` (as where the filesystem ignores the liveness files' locks). Not needed on LiteFS: given none, a database on a LiteFS mount keeps them in `$TMPDIR/cleolease` (`/tmp/cleolease`), proven the same way.",
			set: func(c *Config[D], v string) string {
				if !filepath.IsAbs(v) {
					return "must be an absolute directory path"
				}
				c.SidecarDir = v
				return ""
			},
			get: func(c *Config[D]) string { return c.SidecarDir },
		},
		{
			name: "_lease_slice", field: "Slice", kind: "Go duration", def: DefaultSlice.String(),
			doc: "how long a holder may keep the lane for more of its own work (queued, or a writer that comes straight back; at least two of its transactions) while another process waits; `0` is strict FIFO",
			set: func(c *Config[D], v string) string { return setNonNegative(&c.Slice, v) },
			get: func(c *Config[D]) string { return c.Slice.String() },
		},
		{
			name: "_lease_steal_after_ttl", field: "StealAfterTTL", kind: "bool", def: "false",
			doc: "opt-in: a waiter may take over a lane whose holder is alive but whose heartbeat is older than its TTL (a hung holder). Its later commits are fenced; its side effects outside the database are not.",
			set: func(c *Config[D], v string) string {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return "not a boolean"
				}
				c.StealAfterTTL = b
				return ""
			},
			get: func(c *Config[D]) string { return strconv.FormatBool(c.StealAfterTTL) },
		},
		{
			name: "_lease_ttl", field: "TTL", kind: "Go duration", def: DefaultTTL.String(),
			doc: "written to `ttl_ms`; the heartbeat runs every TTL/3. A live holder is never robbed because of its TTL (unless `_lease_steal_after_ttl`).",
			set: func(c *Config[D], v string) string {
				d, err := time.ParseDuration(v)
				if err != nil {
					return reasonDuration
				}
				if d <= 0 {
					return "must be positive"
				}
				c.TTL = d
				return ""
			},
			get: func(c *Config[D]) string { return c.TTL.String() },
		},
		{
			name: "_lease_wait", field: "Wait", kind: "Go duration", def: DefaultWait.String(),
			doc: "longest wait for a grant before degrade (`local`) or error (`require`); a waiter that had written its queue row (after 100 ms without a hand-off of the lane) leaves the queue with a write, which can add up to the holder's current transaction (at most 5 s)",
			set: func(c *Config[D], v string) string { return setNonNegative(&c.Wait, v) },
			get: func(c *Config[D]) string { return c.Wait.String() },
		},
		{
			name: "_migrations", field: "Migrations", kind: "string", def: "",
			doc: "golang-migrate source URL (`file://dir`); a directory path, if the value has a path separator or starts with `.` (`./migrations`, `/srv/app/migrations`; relative to the working directory); otherwise a name registered with `RegisterMigrations` or `RegisterMigrator`. `cleolease migrate --source` reads a value the same way.",
			set: func(c *Config[D], v string) string { return setNonEmpty(&c.Migrations, v) },
			get: func(c *Config[D]) string { return c.Migrations },
		},
		{
			name: "_migrations_no_tx_wrap", field: "MigrationsNoTxWrap", kind: "bool", def: "false",
			doc: "run each migration file without the per-file transaction (files with their own `BEGIN`/`COMMIT` or `PRAGMA`s)",
			set: func(c *Config[D], v string) string {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return "not a boolean"
				}
				c.MigrationsNoTxWrap = b
				return ""
			},
			get: func(c *Config[D]) string { return strconv.FormatBool(c.MigrationsNoTxWrap) },
		},
		{
			name: "_migrations_replica", field: "MigrationsReplica", kind: "`open` \\| `wait`", def: string(ReplicaOpen),
			doc: "what the first connect does on a LiteFS replica whose copy of the database is behind this program's migrations (which cannot run there): `open` opens it, with a warning naming the file and both versions; reads work and writes fail with `*ReplicaError`. `wait` waits, bounded by the connect's context, until the primary's migration has reached the replica.",
			set: func(c *Config[D], v string) string {
				switch r := ReplicaMigrations(v); r {
				case ReplicaOpen, ReplicaWait:
					c.MigrationsReplica = r
					return ""
				}
				return "must be open or wait"
			},
			get: func(c *Config[D]) string {
				if c.MigrationsReplica == "" {
					return string(ReplicaOpen)
				}
				return string(c.MigrationsReplica)
			},
		},
		{
			name: "_migrations_table", field: "MigrationsTable", kind: "identifier", def: DefaultMigrationsTable,
			doc: "golang-migrate version table",
			set: func(c *Config[D], v string) string {
				if !ValidTableName(v) {
					return "not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*)"
				}
				c.MigrationsTable = v
				return ""
			},
			get: func(c *Config[D]) string {
				if c.MigrationsTable == "" {
					return DefaultMigrationsTable // validate fills it in
				}
				return c.MigrationsTable
			},
		},
	}
}

// lookupLeaseParam returns the cleolease parameter called name, or nil.
func lookupLeaseParam[D any](name string) *leaseParam[D] {
	params := leaseParams[D]()
	i, found := slices.BinarySearchFunc(params, name, func(p leaseParam[D], name string) int {
		return strings.Compare(p.name, name)
	})
	if !found {
		return nil
	}
	return &params[i]
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

// ParseDSN parses a cleolease DSN: a DSN in the base's dialect d (a plain
// path or a "file:" URI) whose query may also carry the parameters
// cleolease owns (those starting "_lease_" or "_migrations").
//
// The query (everything after the first '?') is split on '&'; each name and
// value is percent-decoded with url.QueryUnescape. cleolease's parameters
// are removed and applied to the Config; every other byte is kept, in
// order, in Config.SQLiteDSN (the '?' too, unless nothing is left after it).
//
// ParseDSN returns a *DSNError for an unknown cleolease parameter, one given
// twice, a value that does not parse, or a parameter the base would reject
// or silently ignore (d.Check); and an error matching ErrPrivateMemory for
// migrations on a private in-memory or temporary database (which itself,
// the empty DSN included, is accepted: see checkPrivate).
func ParseDSN[D any](dsn string, d sqlbase.Dialect) (*Config[D], error) {
	c := NewConfig[D]()
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
			if !IsLeaseKey(key) {
				kept = append(kept, tok)
				continue
			}
			p := lookupLeaseParam[D](key)
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
	if err := Validate(c, d); err != nil {
		return nil, err
	}
	return c, nil
}

// FormatDSN returns a DSN that ParseDSN turns back into c (as far as a DSN
// can carry it): SQLiteDSN unchanged, followed by the cleolease parameters
// whose values differ from NewConfig's, sorted by name, values escaped with
// url.QueryEscape and durations written by time.Duration.String.
func (c *Config[D]) FormatDSN() string {
	c = c.Clone()
	c.applyDefaults()
	def := NewConfig[D]()
	var b strings.Builder
	b.WriteString(c.SQLiteDSN)
	sep := "?"
	if strings.Contains(c.SQLiteDSN, "?") {
		// Always '&', even after a trailing '?' or '&': the empty token it
		// makes is part of SQLiteDSN and ParseDSN keeps it.
		sep = "&"
	}
	for _, p := range leaseParams[D]() {
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

// Validate checks a Config, parsed or built by hand, with the rules
// ParseDSN applies, after giving a literal's zero fields their defaults
// (applyDefaults) and filling in an empty MigrationsTable. A bad field is
// reported as a *ConfigError naming the Config field (for example "TTL");
// SQLiteDSN is checked for cleolease's own parameters (which belong in
// the Config's fields), for parameters the base would reject or silently
// ignore (d.Check: a *DSNError naming the parameter), for private
// in-memory databases given migrations, and for settings under which no
// lease can work (checkLockable).
func Validate[D any](c *Config[D], d sqlbase.Dialect) error {
	c.applyDefaults()
	if c.MigrationsTable == "" {
		c.MigrationsTable = DefaultMigrationsTable
	}
	def := NewConfig[D]()
	for _, p := range leaseParams[D]() {
		v := p.get(c)
		if v == p.get(def) {
			continue // defaults are valid
		}
		var scratch Config[D]
		if reason := p.set(&scratch, v); reason != "" {
			return &ConfigError{Field: p.field, Value: v, Reason: reason}
		}
	}
	if err := checkOwnParams(c.SQLiteDSN); err != nil {
		return err
	}
	if err := d.Check(c.SQLiteDSN); err != nil {
		return dsnError(err)
	}
	if err := checkPrivate(c, d); err != nil {
		return err
	}
	if c.Mode != ModeOff && !Private(c, d) {
		return checkLockable(c.SQLiteDSN, d)
	}
	return nil
}

// Private reports whether c's SQLiteDSN opens a private database (in
// memory and not shared, or the temporary one an empty file name opens):
// no other connection, let alone another process, reaches it, so it takes
// no lease and opens exactly as with the base alone (see checkPrivate).
//
// A shared in-memory database (cache=shared, or a memdb name starting with
// '/') is not private and keeps the lease, inside this process only (no
// lease tables, no liveness files: no other process can reach it). Every
// pooled connection of the process reaches it, so its writers contend as a
// file's do — in shared-cache mode with SQLITE_LOCKED, which no
// busy_timeout waits out — and the lease serves them in order; its
// migrations run once per process.
func Private[D any](c *Config[D], d sqlbase.Dialect) bool {
	t, _ := d.Target(c.SQLiteDSN)
	return t.Private()
}

// Param describes one DSN parameter cleolease owns, for documentation and
// checks: its name, the Config field holding it, the kind of value, its
// default as DSN text ("" for none) and its meaning (Markdown).
type Param struct {
	Name, Field, Kind, Def, Doc string
}

// Params returns the DSN parameters cleolease owns, sorted by name.
func Params() []Param {
	ps := leaseParams[struct{}]()
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: p.name, Field: p.field, Kind: p.kind, Def: p.def, Doc: p.doc}
	}
	return out
}
