package cleolease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/cleocode/cleolease/internal/leasectx"
	"github.com/cleocode/cleolease/lease"
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

// The shared API finds this package's connectors behind a *sql.DB.
func init() {
	leasectx.RegisterFinder(func(d driver.Driver) (leasectx.Connector, bool) {
		if dd, ok := d.(*Driver); ok && dd.c != nil {
			return sharedConnector{dd.c}, true
		}
		return nil, false
	})
}

// sharedConnector is a Connector as package writer sees it
// (leasectx.Connector).
type sharedConnector struct{ c *Connector }

func (s sharedConnector) Leased() bool          { return s.c.leased() }
func (s sharedConnector) Engine() *lease.Engine { return s.c.Engine() }
func (s sharedConnector) Acquire(ctx context.Context) (*lease.Hold, error) {
	return s.c.acquire(ctx, nil)
}

// acquire takes the lease for a write made with ctx: nil when the write
// takes none (opted out), a Hold otherwise (degraded in mode local at the
// wait bound). A context that ends while waiting returns exactly
// ctx.Err().
//
// confirm, when not nil, is the connection of the write transaction the
// caller opens next: a waiter told of its grant opens it and confirms the
// grant there (lease.AcquireOptions.Confirm; the Hold is then Begun).
func (c *Connector) acquire(ctx context.Context, confirm lease.Confirmer) (*lease.Hold, error) {
	if leasectx.NoLease(ctx) {
		return nil, nil
	}
	e := c.Engine()
	if e == nil {
		return nil, ErrEngineNotOpen
	}
	prio := leasectx.Priority(ctx, c.cfg.Priority)
	scope, lane := leasectx.Lane(ctx, c.cfg.Scope, c.cfg.Lane)
	h, err := e.Acquire(ctx, scope, lane, lease.AcquireOptions{Priority: prio, Wait: c.cfg.Wait, Require: c.cfg.Mode == ModeRequire, Confirm: confirm})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// database/sql and go-sqlite3 return the context's error itself,
		// and callers compare it with ==; the detail goes to the log.
		c.log.DebugContext(context.WithoutCancel(ctx), "cleolease: gave up waiting for the writer lease", "err", err)
		return nil, ctx.Err()
	}
	return h, c.writeErr(err)
}
