// Package writer is the part of cleolease's public API that every base
// driver shares — go-sqlite3 (package cleolease, driver "cleolease"),
// modernc.org/sqlite and ncruces/go-sqlite3 — and it imports none of them:
// the lane, priority and opt-out a context carries for the writes made
// with it (WithLane, WithPriority, WithoutLease), a lease held across
// transactions (AcquireLease, WithWriterLease, Lease), the lease state of
// a *sql.DB's file (Stats, Status, Break), the typed errors, and the
// configuration values every base's Config takes (Mode, NetworkFS,
// ReplicaMigrations, the defaults).
//
// Package cleolease keeps every name here under the same name (types by
// alias, error values as the same values), so code written against either
// package works with both, and errors.Is and errors.As match across them.
//
// The functions that take a *sql.DB work on a database opened with any
// base's cleolease driver, and return ErrNotCleolease for any other.
package writer
