// Package modernc is cleolease over modernc.org/sqlite, the SQLite driver
// written in Go: the same cross-process writer lease, fencing, queue,
// crash detection and cold-open migrations as package cleolease (over
// go-sqlite3), with no cgo and no C compiler.
//
// An application on modernc.org/sqlite changes its driver name and import:
//
//	import _ "github.com/cleocode/cleolease/modernc"
//
//	db, err := sql.Open("cleolease-modernc", "file:app.db?_pragma=busy_timeout(5000)")
//
// The DSN is modernc's own (its _pragma, _txlock, _time_format, …
// parameters work as with modernc alone, and an underscore parameter
// modernc would silently ignore is a *writer.DSNError naming it) plus
// cleolease's _lease_* and _migrations* parameters. Unless the DSN sets
// them, every connection gets busy_timeout 30000, journal_mode WAL,
// synchronous NORMAL and foreign_keys ON.
//
// The lanes, priorities, held leases, lease state and typed errors are
// package writer's (writer.WithLane, writer.AcquireLease, writer.Stats,
// writer.ErrLeaseUnavailable, …), shared with every base. SQLite's own
// errors come back as modernc returns them (*sqlite.Error, with Code()).
//
// The application's connections come from the driver it configured:
// Config.BaseDriver, or modernc's registered "sqlite" driver, so that the
// hooks of sqlite.RegisterConnectionHook run on them. The lease engine's
// own connection runs no hook of the application's.
//
// Differences from package cleolease: a LiteFS replica's refused write
// (SQLITE_IOERR_WRITE with EACCES) is not recognised as a replica's
// (modernc's error does not carry the system errno), so it comes back as
// SQLite's I/O error rather than a *writer.ReplicaError.
package modernc
