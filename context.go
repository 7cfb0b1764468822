package cleolease

import (
	"context"
	"database/sql"

	"github.com/cleocode/cleolease/writer"
)

// The context helpers and the functions that take a *sql.DB are package
// writer's (shared by every base); these are the same functions under
// this package's name.

// WithLane returns a context whose writes take the lease of (scope, lane).
// Without it, the DSN's _lease_scope and _lease_lane apply. An empty scope
// or lane keeps the DSN default for that part. It is writer.WithLane.
func WithLane(ctx context.Context, scope, lane string) context.Context {
	return writer.WithLane(ctx, scope, lane)
}

// WithPriority returns a context whose writes queue with priority p (lower
// is served first) instead of the DSN's _lease_priority. It is
// writer.WithPriority.
func WithPriority(ctx context.Context, p int) context.Context {
	return writer.WithPriority(ctx, p)
}

// WithoutLease returns a context whose writes take no lease: they run as
// with plain go-sqlite3 (transactions still start with BEGIN IMMEDIATE), are
// not fenced, and wait only in SQLite's busy handler. For tooling that must
// not queue; the lease's guarantees do not cover such writes. It is
// writer.WithoutLease.
func WithoutLease(ctx context.Context) context.Context {
	return writer.WithoutLease(ctx)
}

// Lease is a hold on one lane kept across several transactions (the
// original's withWriterLease): writer.Lease.
type Lease = writer.Lease

// AcquireLease takes the lease of ctx's lane (WithLane, else the DSN
// defaults) on db and keeps it until Release. Errors: ErrLeaseUnavailable
// (mode require, in a *LeaseError), the context's error, ErrNotCleolease,
// or ErrNoLease (mode off, read-only, or a WithoutLease context). It is
// writer.AcquireLease.
func AcquireLease(ctx context.Context, db *sql.DB) (*Lease, error) {
	return writer.AcquireLease(ctx, db)
}

// WithWriterLease holds the lease of ctx's lane on db while fn runs; fn's
// context carries it, so transactions inside re-enter it. It is
// writer.WithWriterLease.
func WithWriterLease(ctx context.Context, db *sql.DB, fn func(ctx context.Context, l *Lease) error) error {
	return writer.WithWriterLease(ctx, db, fn)
}

// Stats returns the lease counters of db's file in this process. Errors:
// ErrNotCleolease, ErrNoLease, or the error of opening db's first
// connection. It is writer.Stats.
func Stats(ctx context.Context, db *sql.DB) (LeaseStats, error) {
	return writer.Stats(ctx, db)
}

// Break releases (scope, lane) of db's file on behalf of an administrator:
// the holder is fenced (its next fenced commit fails with ErrLeaseLost) and
// the lane goes to the next waiter. A provably live holder is refused with
// a *LeaseError wrapping ErrHolderAlive unless force. It returns the
// broken holder, or nil if the lane was free; ErrNotCleolease and
// ErrNoLease as Stats. It is writer.Break.
func Break(ctx context.Context, db *sql.DB, scope, lane string, force bool) (*HolderStatus, error) {
	return writer.Break(ctx, db, scope, lane, force)
}

// Status returns every lane of db's file: holder (alive or dead and why),
// epoch, queue in grant order. It writes nothing. Errors as Stats. It is
// writer.Status.
func Status(ctx context.Context, db *sql.DB) ([]LaneStatus, error) {
	return writer.Status(ctx, db)
}
