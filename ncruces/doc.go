// Package ncruces is cleolease over github.com/ncruces/go-sqlite3, the
// SQLite driver that runs SQLite compiled to WebAssembly and translated to
// Go: the same cross-process writer lease, fencing, queue, crash detection
// and cold-open migrations as package cleolease (over go-sqlite3), with no
// cgo and no C compiler.
//
// An application on ncruces's database/sql driver changes its driver name
// and import:
//
//	import _ "github.com/cleocode/cleolease/ncruces"
//
//	db, err := sql.Open("cleolease-ncruces", "file:app.db?_pragma=busy_timeout(5000)")
//
// or, where it passes callbacks to ncruces's driver.Open(dsn, init, term),
// calls this package's Open with the same arguments.
//
// The DSN is ncruces's own (a file: URI whose _pragma, _txlock and
// _timefmt parameters work as with ncruces alone; an underscore parameter
// ncruces would silently ignore is a *writer.DSNError naming it) plus
// cleolease's _lease_* and _migrations* parameters. Unless the DSN sets
// them with a _pragma, every connection gets busy_timeout 30000,
// journal_mode WAL, synchronous NORMAL and foreign_keys ON (ncruces alone
// sets a busy timeout of one minute when a DSN has no _pragma).
//
// The lanes, priorities, held leases, lease state and typed errors are
// package writer's (writer.WithLane, writer.AcquireLease, writer.Stats,
// writer.ErrLeaseUnavailable, …), shared with every base. SQLite's own
// errors come back as ncruces returns them (*sqlite3.Error, with Code and
// ExtendedCode).
//
// The application's Init and Term callbacks (Callbacks) run on its
// connections only: the lease engine's own connection runs none.
//
// Locks: ncruces locks the database with OFD locks on Linux and macOS,
// which exclude go-sqlite3's and modernc's POSIX locks, so processes of
// every base share a file. Built with the tag sqlite3_flock or
// sqlite3_dotlk (or on the BSDs and illumos, where flock is its default)
// its locks do not exclude theirs: a process opening a file another base's
// live process has open, or the reverse, gets writer.ErrLockingConflict
// naming both kinds.
//
// Differences from ncruces alone: isolation levels are cleolease's (the
// default and LevelSerializable; ncruces also takes LevelLinearizable as
// BEGIN EXCLUSIVE, which cleolease refuses), an Init that sets PRAGMA
// query_only does not make the connection's transactions deferred, and a
// _pragma naming no PRAGMA SQLite knows is refused. In a sqlite3_dotlk build
// a writable file is not switched to WAL: ncruces shares that build's WAL
// index within one process only.
package ncruces
