package api

import (
	"errors"
	"fmt"

	"github.com/cleocode/cleolease/lease"
)

// Lease errors: the lease engine's own values (package lease), so that
// errors.Is matches whichever name a caller uses.
var (
	// ErrLeaseUnavailable: no grant within _lease_wait in mode require. (The
	// cold-open lease never degrades and is bounded only by the context.)
	ErrLeaseUnavailable = lease.ErrUnavailable
	// ErrLeaseLost: a fenced commit found that its (holder, epoch) was no
	// longer active; the transaction was rolled back and changed nothing.
	// Lease.Check reports it too.
	ErrLeaseLost = lease.ErrLost
	// ErrFileChanged: the database path was renamed over or deleted while
	// the connector was open; writes through it are refused.
	ErrFileChanged = lease.ErrFileChanged
	// ErrHolderAlive: Break refused because the lane's holder is provably
	// alive and force was not given.
	ErrHolderAlive = lease.ErrHolderAlive
	// ErrIndexMissing: the lease tables' partial unique index
	// ux_writer_leases_active is missing, so SQLite would not enforce one
	// holder per (scope, lane); the engine refuses to run.
	ErrIndexMissing = lease.ErrIndexMissing
	// ErrUntrusted: the lease tables hold contents the engine cannot trust
	// (several active rows, values of the wrong type); nothing is granted.
	ErrUntrusted = lease.ErrUntrusted
	// ErrTierConflict: processes built with the other Linux liveness tier
	// (with or without the build tag cleolease_portable) use the database;
	// build every program that shares the file with the same tags.
	ErrTierConflict = lease.ErrTierConflict
	// ErrLockingConflict: another live process of the file takes SQLite
	// file locks that do not exclude this process's (flock and POSIX
	// record locks, say: a base built with other locking), so their writes
	// could overlap; the first connect is refused and writes nothing. The
	// *LeaseError's Reason names both kinds; build every program that
	// shares the file with compatible locking.
	ErrLockingConflict = lease.ErrLockingConflict
	// ErrSidecarDir: the liveness files cannot prove a holder alive where
	// they are (their locks are not seen from another open file, or
	// processes of this host keep them in different places: beside the
	// database and in a _lease_sidecar_dir, two different directories,
	// or, on a LiteFS mount, different derived local directories); give
	// every process of the host the same _lease_sidecar_dir (a local
	// directory), or none. The *LeaseError's Reason says which.
	ErrSidecarDir = lease.ErrSidecarDir
	// ErrLeaseClosed: a write waited for the lease while this process's
	// lease engine of the file was closing (its last connector closed).
	ErrLeaseClosed = lease.ErrClosed
)

// LeaseError is the detailed form of every lease failure: the operation,
// file, scope, lane, the holder in the way and the cause (one of the
// sentinels above, a context error or an SQLite error).
type LeaseError = lease.Error

// LeaseStats are the lease counters of one file in this process (Stats).
type LeaseStats = lease.Stats

// LaneStatus is one (scope, lane) of a file as Status reports it: its
// holder, its highest epoch and its waiters in grant order.
type LaneStatus = lease.LaneStatus

// HolderStatus is a lane's active holder, alive or dead and why (Status,
// Break).
type HolderStatus = lease.HolderStatus

// WaiterStatus is one waiter of a lane (LaneStatus.Waiters).
type WaiterStatus = lease.WaiterStatus

// Clock is the lease engine's source of wall-clock time (Config.Clock):
// tests inject one to step time; nil in a Config means the system clock.
type Clock = lease.Clock

// Errors of this package's own.
var (
	// ErrConnectorClosed: a connection was requested from a Connector
	// after its Close.
	ErrConnectorClosed = errors.New("cleolease: connector closed")
	// ErrEngineNotOpen: a leased write found no lease engine for its
	// connector (its first connection never opened one).
	ErrEngineNotOpen = errors.New("cleolease: lease engine not open")
	// ErrNotCleolease: AcquireLease, WithWriterLease, Stats, Status or
	// Break was given a *sql.DB that was not opened with this driver.
	ErrNotCleolease = errors.New("cleolease: not a cleolease database")
	// ErrNoLease: AcquireLease, WithWriterLease, Stats, Status or Break on
	// a database whose writes take no lease (mode off, read-only, or a
	// private database: see ErrPrivateMemory), or
	// AcquireLease with a context that opts out (WithoutLease).
	ErrNoLease = errors.New("cleolease: writes take no lease here")
)

var (
	// ErrForeignTransaction: a write that needs the lease was issued on a
	// connection inside a transaction the driver did not start (for example
	// a hand-written BEGIN on a *sql.Conn). The driver neither commits nor
	// rolls back that transaction; the caller still owns it.
	ErrForeignTransaction = errors.New("cleolease: refusing to take the writer lease inside a transaction the driver did not start")
	// ErrPrivateMemory: migrations (_migrations, Config.MigrationsFS,
	// Config.Migrator) were configured on a private database — in memory
	// (":memory:", mode=memory without cache=shared, a memdb name not
	// starting with '/') or the temporary on-disk database SQLite opens for
	// an empty file name. Such a database is a different one on every
	// connection, so migrations would land on the migrations' own
	// connection, which nobody else sees. The database itself opens exactly
	// as with the base driver alone, with no lease: no other process can
	// reach it.
	// For migrations, use a file, or an in-memory database every
	// connection of the process shares: "file::memory:?cache=shared" over
	// go-sqlite3 and modernc; over ncruces, whose SQLite has no shared
	// cache, a memdb database named with a leading '/' (its vfs/memdb).
	ErrPrivateMemory = errors.New("cleolease: migrations on a private database (in memory, or the temporary one an empty file name opens), which differs on every connection; use a file path, or an in-memory database the connections share (file::memory:?cache=shared; over ncruces, a memdb name starting with '/')")
	// ErrBaseDriverMismatch: a connector's Config.BaseDriver differs from
	// the one this process's lease engine of the same file was opened with
	// (by an earlier connector). The engine's private connection runs one
	// base driver's ConnectHook; use one BaseDriver per file (nil counts as
	// one). It is lease.ErrDriverMismatch.
	ErrBaseDriverMismatch = lease.ErrDriverMismatch
)

// DSNError reports a DSN parameter cleolease rejects: an unknown parameter
// it owns, an underscore parameter the base driver would silently ignore,
// or a value that does not parse. Value is empty when the name itself is the
// problem.
type DSNError struct {
	Param  string
	Value  string
	Reason string
}

func (e *DSNError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("cleolease: DSN parameter %q: %s", e.Param, e.Reason)
	}
	return fmt.Sprintf("cleolease: DSN parameter %q has bad value %q: %s", e.Param, e.Value, e.Reason)
}

// ErrExclusiveLocking is returned, without running anything, for a
// statement string holding PRAGMA locking_mode=EXCLUSIVE on a connection
// whose writes take the lease: in exclusive locking mode SQLite keeps its
// file locks after each transaction, so every other process's lease (and
// write) would stall until this connection closes. Open the database with
// _lease_mode=off to use exclusive locking.
var ErrExclusiveLocking = errors.New("cleolease: PRAGMA locking_mode=EXCLUSIVE keeps SQLite's file locks and would stall every other process; it needs _lease_mode=off")

// ConfigError reports a Config field that NewConnector or OpenDB rejects:
// Field is the Config field's name ("TTL", "Lane", ...), Value the
// offending value as text (empty when the field is empty) and Reason why it
// is refused; for a nil *Config, Field and Value are empty. Problems inside Config.SQLiteDSN are reported as a *DSNError
// naming the DSN parameter, since that is what the caller wrote.
type ConfigError struct {
	Field  string
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "cleolease: " + e.Reason
	}
	if e.Value == "" {
		return fmt.Sprintf("cleolease: Config.%s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("cleolease: Config.%s has bad value %q: %s", e.Field, e.Value, e.Reason)
}
