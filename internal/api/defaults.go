package api

import "time"

// Mode selects how the writer lease behaves (DSN _lease_mode).
type Mode string

const (
	// ModeOff: pure pass-through; no lease, no lease tables; migrations run
	// without the cold-open lease.
	ModeOff Mode = "off"
	// ModeLocal (default): wait up to Config.Wait for the lease, then proceed
	// without it (a degraded grant: logged at warning level and counted).
	// A cancelled or expired context never becomes a degraded grant. On a
	// LiteFS mount it fails as ModeRequire does: a holder that looks alive
	// may be a former primary's process (README, "Beyond one host").
	ModeLocal Mode = "local"
	// ModeRequire: wait up to Config.Wait, then fail with ErrLeaseUnavailable.
	ModeRequire Mode = "require"
)

// Defaults of the DSN parameters owned by cleolease, for Go callers; the
// parameter table (leaseParams) applies them.
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
