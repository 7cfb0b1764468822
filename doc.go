// Package cleolease is a database/sql driver for SQLite files that several
// processes write at once. It wraps github.com/mattn/go-sqlite3 (through
// github.com/ngrok/sqlmw) and gives every write a cross-process writer
// lease per (scope, lane), taken transparently in BeginTx, Exec and every
// other write path. Existing code changes only the driver name:
//
//	db, err := sql.Open("cleolease", "file:app.db") // was: sql.Open("sqlite3", …)
//
// What that buys, on every platform go-sqlite3 supports:
//
//   - writers are served in order (FIFO within a priority), across
//     processes and goroutines, with no SQLITE_BUSY ("database is locked")
//     and waits that honour context deadlines;
//   - a leased write starts with BEGIN IMMEDIATE and checks, inside the
//     transaction and just before COMMIT, that its (holder, epoch) is still
//     the active one (fencing): a holder that lost its lease cannot commit;
//   - a crashed holder is recognised at once, from a lock it holds for its
//     lifetime, and its lane handed to the next waiter;
//   - the first time a process opens a file, pending migrations run under a
//     cold-open lease: exactly one process migrates.
//
// # DSN
//
// A DSN is a go-sqlite3 DSN (a path or a "file:" URI, with go-sqlite3's
// underscore parameters and SQLite's URI options) plus the parameters
// cleolease owns, which start with "_lease_" or "_migrations". Every other
// parameter reaches go-sqlite3 byte-identical; an underscore parameter
// go-sqlite3 v1.14.53 does not read (a typo such as "_busy_timout") is
// refused with a *DSNError naming it, since go-sqlite3 would silently
// ignore it. Unless the DSN sets them, every connection gets
// _busy_timeout=30000, _journal_mode=WAL, _synchronous=NORMAL and
// _foreign_keys=1. ParseDSN and Config.FormatDSN convert between a DSN and
// a Config. The parameters (defaults in parentheses):
//
//   - _lease_lane (default): lane of writes whose context names none (WithLane)
//   - _lease_linger (100ms): how long an idle holder keeps the lease row while nobody waits, so the next transaction pays no claim; handed over at once when a waiter queues
//   - _lease_mode (local): off: pure pass-through, no lease tables. local: after _lease_wait, proceed without the lease (a degraded grant: logged at warning level and counted; never caused by a cancelled context). require: after _lease_wait, fail with ErrLeaseUnavailable. On a LiteFS mount local fails as require does.
//   - _lease_network_fs (refuse): a database on a network filesystem (NFS, SMB/CIFS, 9p, AFS, Ceph, Lustre, …) is refused at the first connect with *NetworkFSError; allow opens it anyway, with a warning, and gives up what the README's "Beyond one host" says. _lease_mode=off and read-only opens are never refused.
//   - _lease_priority (100): queue priority, lower is served first (WithPriority overrides it per call)
//   - _lease_quiet (false): true: log nothing. Otherwise warnings (a degraded grant, naming the file, lane, wait and holder; a FUSE or allowed network filesystem; pending migrations on a read-only file) go to Config.Logger, else to slog.Default(). A discarding Config.Logger (slog.New(slog.DiscardHandler)) silences them too.
//   - _lease_scope (main): scope of writes whose context names none (WithLane)
//   - _lease_sidecar_dir (none): where the liveness files live (the sidecar <db>-cleolease, or the portable tier's <db>-cleolease.d), named after the database's file name and identity, instead of beside the database. Every process that opens the file must give the same directory, or none: each records where it keeps them in the database (table _writer_sidecar), and one that finds another place recorded by a process still at work refuses its writes with ErrSidecarDir (as where the filesystem ignores the liveness files' locks). Not needed on LiteFS: given none, a database on a LiteFS mount keeps them in $TMPDIR/cleolease (/tmp/cleolease), proven the same way.
//   - _lease_slice (2ms): how long a holder may keep the lane for more of its own work (queued, or a writer that comes straight back; at least two of its transactions) while another process waits; 0 is strict FIFO
//   - _lease_steal_after_ttl (false): opt-in: a waiter may take over a lane whose holder is alive but whose heartbeat is older than its TTL (a hung holder). Its later commits are fenced; its side effects outside the database are not.
//   - _lease_ttl (30s): written to ttl_ms; the heartbeat runs every TTL/3. A live holder is never robbed because of its TTL (unless _lease_steal_after_ttl).
//   - _lease_wait (30s): longest wait for a grant before degrade (local) or error (require); a waiter that had written its queue row (after 100 ms without a hand-off of the lane) leaves the queue with a write, which can add up to the holder's current transaction (at most 5 s)
//   - _migrations (none): golang-migrate source URL (file://dir); a directory path, if the value has a path separator or starts with "." (./migrations, /srv/app/migrations; relative to the working directory); otherwise a name registered with RegisterMigrations or RegisterMigrator. cleolease migrate --source reads a value the same way.
//   - _migrations_no_tx_wrap (false): run each migration file without the per-file transaction (files with their own BEGIN/COMMIT or PRAGMAs)
//   - _migrations_replica (open): what the first connect does on a LiteFS replica whose copy of the database is behind this program's migrations (which cannot run there): open opens it, with a warning naming the file and both versions; reads work and writes fail with *ReplicaError. wait waits, bounded by the connect's context, until the primary's migration has reached the replica.
//   - _migrations_table (schema_migrations): golang-migrate version table
//
// Refused at sql.Open, because no lease can work under them:
// _locking_mode=EXCLUSIVE, nolock=1 and the lockless VFSes (unix-none,
// win32-none, unix-excl), unless _lease_mode=off or the database is
// private. A private database (":memory:", mode=memory without
// cache=shared, an empty file name) is reachable from no other process: it
// opens exactly as with go-sqlite3, without a lease; only migrations on it
// are refused (ErrPrivateMemory), since they would run on a connection
// nobody else sees. A shared one ("file::memory:?cache=shared") is leased
// inside the process.
//
// # Config
//
// OpenDB and NewConnector take a *Config instead of a DSN, for what a DSN
// cannot carry: a migrations fs.FS or a Migrator, a *slog.Logger, a base
// *sqlite3.SQLiteDriver (extensions, ConnectHook) and a clock:
//
//	cfg := cleolease.NewConfig() // every field at its default, explicitly
//	cfg.SQLiteDSN = "file:app.db"
//	cfg.Logger = slog.Default()
//	db, err := cleolease.OpenDB(cfg)
//
// In a Config literal (&cleolease.Config{SQLiteDSN: "file:app.db"}), fields
// left at zero take the defaults above; to set Wait, Priority, Slice or
// Linger to an explicit zero, start from NewConfig. A bad field is a
// *ConfigError naming it.
//
// Warnings (a degraded grant, a FUSE or allowed network filesystem, pending
// migrations on a read-only file or a LiteFS replica) go to Config.Logger, else to slog.Default();
// _lease_quiet=true (Config.Quiet) or a discarding Config.Logger silences them.
//
// # Which writes take the lease
//
// Every statement that may write (SQLite's sqlite3_stmt_readonly, asked of
// each statement of a string before it runs) and every BeginTx that is not
// ReadOnly takes the lease of the (scope, lane) that its context names
// (WithLane; WithPriority for its place in line; WithoutLease to opt a call
// out), else the DSN's. Reads and ReadOnly transactions take none. A
// statement that writes only TEMP tables or an attached database takes
// none either. A statement is a write before it runs, whatever it turns
// out to change: CREATE TABLE IF NOT EXISTS on a table that exists takes
// the lease too. AcquireLease and WithWriterLease hold one lane across
// several transactions; transactions made with the Lease's context
// re-enter it.
//
// # Transactions and fencing
//
// BeginTx waits for the lease, then starts BEGIN IMMEDIATE whatever _txlock
// says, so a transaction that reads and then writes never fails with
// SQLITE_BUSY. ReadOnly transactions run under PRAGMA query_only. Isolation
// levels other than the default and Serializable are refused. An
// autocommit write runs inside the driver's own BEGIN IMMEDIATE … COMMIT
// with the fencing check before COMMIT; VACUUM, PRAGMA, ATTACH/DETACH,
// transaction-control statements and strings of several statements are
// leased but not fenced. A write issued through Query (INSERT … RETURNING)
// runs to completion and commits before Query returns; its rows come back
// buffered. A write on a connection inside a transaction the driver did not
// begin (a hand-written BEGIN) is refused with ErrForeignTransaction.
//
// # Errors
//
// SQLite's own errors come back unchanged, as go-sqlite3 returns them (the
// same sqlite3.Error value, errors at open included; the one exception is
// a write a LiteFS replica refused, a *ReplicaError that wraps it), so that ORMs
// inspecting them keep working, and a context that ends while waiting for
// the lease returns the context's error itself (err == ctx.Err()), which
// names no file or lane: Stats counts such waits (LeaseStats.Abandoned) and
// Config.Logger, at debug level, logs each with the file's path, scope,
// lane and holder. cleolease's
// own: ErrLeaseUnavailable, ErrLeaseLost, ErrFileChanged,
// ErrForeignTransaction, ErrPrivateMemory, ErrExclusiveLocking,
// ErrBaseDriverMismatch, ErrNetworkFS (*NetworkFSError), ErrSidecarDir
// (the liveness files cannot prove a holder alive where they are: give
// _lease_sidecar_dir), ErrReplica (*ReplicaError: a write on a LiteFS
// replica, naming the primary), *DSNError,
// *ConfigError, *LeaseError and *MigrationError (ErrMigrationFailed,
// ErrMigrationDirty), for errors.Is and errors.As.
//
// # Differences from go-sqlite3
//
// Apart from the lease, every call returns what go-sqlite3 returns: the
// same rows and the same errors, the first time and every time
// (differential_test.go checks it call by call). The differences the lease
// forces are a closed list, each with its reason, in the README's section
// "Differences from go-sqlite3".
//
// # Reaching the native connection
//
// sql.Conn.Raw hands its callback a value implementing Conn, whose
// SQLiteConn method returns the *sqlite3.SQLiteConn (backup, RegisterFunc,
// hooks). Writes issued directly on it bypass the lease and the fencing.
package cleolease

// How it is built, for maintainers (go doc does not show this comment):
// database/sql holds an outer connection (Raw access) over sqlmw's
// connection, whose interceptor (interceptor.go) checks the database file's
// identity on Ping and returns the opened connection to Connect; under it
// leaseConn (conn.go) decides for each call whether it writes (classify.go)
// and runs every leased write through one mechanism, leasedWrite
// (write.go). The lease engine is package lease; its OS mechanisms are in
// internal/platform.
