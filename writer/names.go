package writer

import "github.com/cleocode/cleolease/internal/api"

// Lease errors: the lease engine's own values, tested with errors.Is.
var (
	// ErrLeaseUnavailable: no grant within _lease_wait in mode require.
	// (The cold-open lease never degrades and is bounded only by the
	// context.)
	ErrLeaseUnavailable = api.ErrLeaseUnavailable
	// ErrLeaseLost: a fenced commit found that its (holder, epoch) was no
	// longer active; the transaction was rolled back and changed nothing.
	// Lease.Check reports it too.
	ErrLeaseLost = api.ErrLeaseLost
	// ErrFileChanged: the database path was renamed over or deleted while
	// the connector was open; writes through it are refused.
	ErrFileChanged = api.ErrFileChanged
	// ErrHolderAlive: Break refused because the lane's holder is provably
	// alive and force was not given.
	ErrHolderAlive = api.ErrHolderAlive
	// ErrIndexMissing: the lease tables' partial unique index is missing,
	// so SQLite would not enforce one holder per (scope, lane); the engine
	// refuses to run.
	ErrIndexMissing = api.ErrIndexMissing
	// ErrUntrusted: the lease tables hold contents the engine cannot
	// trust; nothing is granted.
	ErrUntrusted = api.ErrUntrusted
	// ErrTierConflict: processes built with the other Linux liveness tier
	// (with or without the build tag cleolease_portable) use the database.
	ErrTierConflict = api.ErrTierConflict
	// ErrLockingConflict: another live process of the file takes SQLite
	// file locks that do not exclude this process's; the *LeaseError's
	// Reason names both kinds.
	ErrLockingConflict = api.ErrLockingConflict
	// ErrSidecarDir: the liveness files cannot prove a holder alive where
	// they are; give every process of the host the same _lease_sidecar_dir
	// (a local directory), or none. The *LeaseError's Reason says which.
	ErrSidecarDir = api.ErrSidecarDir
	// ErrLeaseClosed: a write waited for the lease while this process's
	// lease engine of the file was closing (its last connector closed).
	ErrLeaseClosed = api.ErrLeaseClosed
)

// Errors of the driver, tested with errors.Is.
var (
	// ErrConnectorClosed: a connection was requested from a connector
	// after its Close.
	ErrConnectorClosed = api.ErrConnectorClosed
	// ErrEngineNotOpen: a leased write found no lease engine for its
	// connector.
	ErrEngineNotOpen = api.ErrEngineNotOpen
	// ErrNotCleolease: a function of this package was given a *sql.DB not
	// opened with a cleolease driver.
	ErrNotCleolease = api.ErrNotCleolease
	// ErrNoLease: the database's writes take no lease (mode off,
	// read-only, a private database), or a WithoutLease context was given
	// to AcquireLease.
	ErrNoLease = api.ErrNoLease
	// ErrForeignTransaction: a write that needs the lease was issued inside
	// a transaction the driver did not start (a hand-written BEGIN on a
	// *sql.Conn); the caller still owns that transaction.
	ErrForeignTransaction = api.ErrForeignTransaction
	// ErrPrivateMemory: migrations were configured on a private database
	// (in memory and not shared, or the temporary one an empty file name
	// opens), which differs on every connection.
	ErrPrivateMemory = api.ErrPrivateMemory
	// ErrBaseDriverMismatch: a connector's base driver differs from the
	// one this process's lease engine of the same file was opened with.
	ErrBaseDriverMismatch = api.ErrBaseDriverMismatch
	// ErrExclusiveLocking: PRAGMA locking_mode=EXCLUSIVE on a leased
	// connection, refused without running anything (it needs
	// _lease_mode=off).
	ErrExclusiveLocking = api.ErrExclusiveLocking
	// ErrNetworkFS matches every *NetworkFSError.
	ErrNetworkFS = api.ErrNetworkFS
	// ErrReplica matches every *ReplicaError.
	ErrReplica = api.ErrReplica
)

// LeaseError is the detailed form of every lease failure: the operation,
// file, scope, lane, the holder in the way and the cause (one of the
// sentinels, a context error or an SQLite error), read with errors.As.
type LeaseError = api.LeaseError

// LeaseStats are the lease counters of one file in this process (Stats).
type LeaseStats = api.LeaseStats

// LaneStatus is one (scope, lane) of a file as Status reports it: its
// holder, its highest epoch and its waiters in grant order.
type LaneStatus = api.LaneStatus

// HolderStatus is a lane's active holder, alive or dead and why (Status,
// Break).
type HolderStatus = api.HolderStatus

// WaiterStatus is one waiter of a lane (LaneStatus.Waiters).
type WaiterStatus = api.WaiterStatus

// Clock is the lease engine's source of wall-clock time (Config.Clock);
// nil means the system clock.
type Clock = api.Clock

// DSNError reports a DSN parameter cleolease rejects (Param, Value,
// Reason): an unknown parameter it owns, an underscore parameter the base
// driver would silently ignore, or a value that does not parse.
type DSNError = api.DSNError

// ConfigError reports a Config field that a connector rejects (Field,
// Value, Reason).
type ConfigError = api.ConfigError

// NetworkFSError is returned by the first connect of a connector whose
// database lies on a network filesystem, unless _lease_network_fs=allow.
type NetworkFSError = api.NetworkFSError

// ReplicaError is returned when a write on a LiteFS replica was refused;
// it unwraps to SQLite's own error, of the base driver's type.
type ReplicaError = api.ReplicaError

// Mode selects how the writer lease behaves (DSN _lease_mode).
type Mode = api.Mode

// The modes: no lease, wait then degrade (the default), wait then fail.
const (
	ModeOff     = api.ModeOff
	ModeLocal   = api.ModeLocal
	ModeRequire = api.ModeRequire
)

// NetworkFS is what a connector does with a database on a network
// filesystem (DSN _lease_network_fs).
type NetworkFS = api.NetworkFS

// The network filesystem choices: refuse (the default) or allow.
const (
	NetworkFSRefuse = api.NetworkFSRefuse
	NetworkFSAllow  = api.NetworkFSAllow
)

// ReplicaMigrations is what the first connect does on a LiteFS replica
// behind the configured migrations (DSN _migrations_replica).
type ReplicaMigrations = api.ReplicaMigrations

// The replica choices: open as it is (the default), or wait for the
// primary's migrations.
const (
	ReplicaOpen = api.ReplicaOpen
	ReplicaWait = api.ReplicaWait
)

// Defaults of the DSN parameters owned by cleolease.
const (
	DefaultScope           = api.DefaultScope
	DefaultLane            = api.DefaultLane
	DefaultTTL             = api.DefaultTTL
	DefaultWait            = api.DefaultWait
	DefaultPriority        = api.DefaultPriority
	DefaultSlice           = api.DefaultSlice
	DefaultLinger          = api.DefaultLinger
	DefaultMigrationsTable = api.DefaultMigrationsTable
)

// Config is a parsed cleolease DSN plus what a DSN cannot carry, for a
// base whose own driver value is D (BaseDriver): package cleolease's Config
// is Config[*sqlite3.SQLiteDriver]. Each base's package has NewConfig,
// ParseDSN, NewConnector and OpenDB for it; see api.Config's fields for
// their meaning and defaults.
type Config[D any] = api.Config[D]

// Migrator migrates a database with a tool of its own (ent's
// Schema.Create, goose's Up, atlas, hand-written DDL) at the first open of
// a file by a process, under the cold-open lease: see Config.Migrator.
type Migrator = api.Migrator

// MigratorFunc adapts a function to a Migrator.
type MigratorFunc = api.MigratorFunc
