package writer

import (
	"context"

	"github.com/cleocode/cleolease/internal/leasectx"
)

// WithLane returns a context whose writes take the lease of (scope, lane).
// Without it, the DSN's _lease_scope and _lease_lane apply. An empty scope
// or lane keeps the DSN default for that part.
func WithLane(ctx context.Context, scope, lane string) context.Context {
	return leasectx.WithLane(ctx, scope, lane)
}

// WithPriority returns a context whose writes queue with priority p (lower
// is served first) instead of the DSN's _lease_priority.
func WithPriority(ctx context.Context, p int) context.Context {
	return leasectx.WithPriority(ctx, p)
}

// WithoutLease returns a context whose writes take no lease: they run as
// with the base driver alone (transactions still start with BEGIN
// IMMEDIATE), are not fenced, and wait only in SQLite's busy handler. For
// tooling that must not queue; the lease's guarantees do not cover such
// writes.
func WithoutLease(ctx context.Context) context.Context {
	return leasectx.WithoutLease(ctx)
}
