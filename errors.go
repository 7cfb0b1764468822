package cleolease

import "github.com/cleocode/cleolease/writer"

// Errors and types: one convention. Every error value and every type a
// user of this package can meet — from sql.Open, a statement, a
// transaction, AcquireLease, Stats, Status or Break — is declared or
// re-exported here, so a program never imports package lease (nor package
// writer, where the names every base shares are declared):
//
//   - Sentinels are package-level error values tested with errors.Is.
//     Those that come from the lease engine are the engine's own values
//     under the names below (ErrLeaseUnavailable is lease.ErrUnavailable),
//     so errors.Is matches whichever package's name a caller uses.
//   - Lease failures come as *LeaseError (an alias of lease.Error), read
//     with errors.As; its Unwrap yields one of the sentinels, a context
//     error or an SQLite error. Bad DSN parameters come as *DSNError,
//     a bad Config as *ConfigError, migration failures as *MigrationError.
//   - Types returned by this package's functions or taken by Config
//     (LeaseStats, LaneStatus, HolderStatus, WaiterStatus, Clock) are
//     aliases of the engine's types.
//   - SQLite's own errors (sqlite3.Error) are returned unchanged, as
//     go-sqlite3 returns them (err.(sqlite3.Error) works), opening errors
//     included, except a write a LiteFS replica refused: a *ReplicaError
//     (replica.go) that wraps SQLite's error; only errors cleolease originates (lease, DSN, Config,
//     migration errors) name the file.

// The sentinels and types below are package writer's (shared by every
// base), under the same names: the same values and, by alias, the same
// types.

// Lease errors: the lease engine's own values (package lease).
var (
	// ErrLeaseUnavailable: no grant within _lease_wait in mode require.
	ErrLeaseUnavailable = writer.ErrLeaseUnavailable
	// ErrLeaseLost: a fenced commit found that its (holder, epoch) was no
	// longer active; the transaction was rolled back and changed nothing.
	ErrLeaseLost = writer.ErrLeaseLost
	// ErrFileChanged: the database path was renamed over or deleted while
	// the connector was open.
	ErrFileChanged = writer.ErrFileChanged
	// ErrHolderAlive: Break refused a provably live holder without force.
	ErrHolderAlive = writer.ErrHolderAlive
	// ErrIndexMissing: the lease tables' unique index is missing.
	ErrIndexMissing = writer.ErrIndexMissing
	// ErrUntrusted: the lease tables hold contents the engine cannot trust.
	ErrUntrusted = writer.ErrUntrusted
	// ErrTierConflict: processes built with the other Linux liveness tier
	// use the database.
	ErrTierConflict = writer.ErrTierConflict
	// ErrLockingConflict: another live process of the file takes SQLite
	// file locks that do not exclude this process's.
	ErrLockingConflict = writer.ErrLockingConflict
	// ErrSidecarDir: the liveness files cannot prove a holder alive where
	// they are.
	ErrSidecarDir = writer.ErrSidecarDir
	// ErrLeaseClosed: a write waited for the lease while this process's
	// lease engine of the file was closing.
	ErrLeaseClosed = writer.ErrLeaseClosed
)

// LeaseError is the detailed form of every lease failure: writer.LeaseError.
type LeaseError = writer.LeaseError

// LeaseStats are the lease counters of one file in this process (Stats):
// writer.LeaseStats.
type LeaseStats = writer.LeaseStats

// LaneStatus is one (scope, lane) of a file as Status reports it:
// writer.LaneStatus.
type LaneStatus = writer.LaneStatus

// HolderStatus is a lane's active holder (Status, Break):
// writer.HolderStatus.
type HolderStatus = writer.HolderStatus

// WaiterStatus is one waiter of a lane (LaneStatus.Waiters):
// writer.WaiterStatus.
type WaiterStatus = writer.WaiterStatus

// Clock is the lease engine's source of wall-clock time (Config.Clock):
// writer.Clock.
type Clock = writer.Clock

// Errors of the driver (writer's values; see there for each).
var (
	ErrConnectorClosed    = writer.ErrConnectorClosed
	ErrEngineNotOpen      = writer.ErrEngineNotOpen
	ErrNotCleolease       = writer.ErrNotCleolease
	ErrNoLease            = writer.ErrNoLease
	ErrForeignTransaction = writer.ErrForeignTransaction
	ErrPrivateMemory      = writer.ErrPrivateMemory
	ErrBaseDriverMismatch = writer.ErrBaseDriverMismatch
	ErrExclusiveLocking   = writer.ErrExclusiveLocking
	ErrNetworkFS          = writer.ErrNetworkFS
	ErrReplica            = writer.ErrReplica
)

// DSNError reports a DSN parameter cleolease rejects: writer.DSNError.
type DSNError = writer.DSNError

// ConfigError reports a Config field NewConnector or OpenDB rejects:
// writer.ConfigError.
type ConfigError = writer.ConfigError

// NetworkFSError is returned by the first connect of a connector whose
// database lies on a network filesystem: writer.NetworkFSError.
type NetworkFSError = writer.NetworkFSError

// ReplicaError is returned when a write on a LiteFS replica was refused:
// writer.ReplicaError.
type ReplicaError = writer.ReplicaError

// Mode selects how the writer lease behaves (DSN _lease_mode): writer.Mode.
type Mode = writer.Mode

// The modes (writer's).
const (
	ModeOff     = writer.ModeOff
	ModeLocal   = writer.ModeLocal
	ModeRequire = writer.ModeRequire
)

// NetworkFS is what the connector does with a database on a network
// filesystem (DSN _lease_network_fs): writer.NetworkFS.
type NetworkFS = writer.NetworkFS

// The network filesystem choices (writer's).
const (
	NetworkFSRefuse = writer.NetworkFSRefuse
	NetworkFSAllow  = writer.NetworkFSAllow
)

// ReplicaMigrations is what the first connect does on a LiteFS replica
// behind the configured migrations (DSN _migrations_replica):
// writer.ReplicaMigrations.
type ReplicaMigrations = writer.ReplicaMigrations

// The replica choices (writer's).
const (
	ReplicaOpen = writer.ReplicaOpen
	ReplicaWait = writer.ReplicaWait
)

// Defaults of the DSN parameters owned by cleolease, for Go callers
// (writer's).
const (
	DefaultScope           = writer.DefaultScope
	DefaultLane            = writer.DefaultLane
	DefaultTTL             = writer.DefaultTTL
	DefaultWait            = writer.DefaultWait
	DefaultPriority        = writer.DefaultPriority
	DefaultSlice           = writer.DefaultSlice
	DefaultLinger          = writer.DefaultLinger
	DefaultMigrationsTable = writer.DefaultMigrationsTable
)
