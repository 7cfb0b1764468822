package cleolease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cleocode/cleolease/lease"
)

type laneKey struct{}

type laneVal struct{ scope, lane string }

// WithLane returns a context whose writes take the lease of (scope, lane).
// Without it, the DSN's _lease_scope and _lease_lane apply. An empty scope
// or lane keeps the DSN default for that part.
func WithLane(ctx context.Context, scope, lane string) context.Context {
	return context.WithValue(ctx, laneKey{}, laneVal{scope, lane})
}

type priorityKey struct{}

// WithPriority returns a context whose writes queue with priority p (lower
// is served first) instead of the DSN's _lease_priority.
func WithPriority(ctx context.Context, p int) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

type noLeaseKey struct{}

// WithoutLease returns a context whose writes take no lease: they run as
// with plain go-sqlite3 (transactions still start with BEGIN IMMEDIATE), are
// not fenced, and wait only in SQLite's busy handler. For tooling that must
// not queue; the lease's guarantees do not cover such writes.
func WithoutLease(ctx context.Context) context.Context {
	return context.WithValue(ctx, noLeaseKey{}, true)
}

func (c *Connector) laneOf(ctx context.Context) (scope, lane string) {
	scope, lane = c.cfg.Scope, c.cfg.Lane
	if v, ok := ctx.Value(laneKey{}).(laneVal); ok {
		if v.scope != "" {
			scope = v.scope
		}
		if v.lane != "" {
			lane = v.lane
		}
	}
	return scope, lane
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
	if v, _ := ctx.Value(noLeaseKey{}).(bool); v {
		return nil, nil
	}
	e := c.Engine()
	if e == nil {
		return nil, ErrEngineNotOpen
	}
	prio := c.cfg.Priority
	if p, ok := ctx.Value(priorityKey{}).(int); ok {
		prio = p
	}
	scope, lane := c.laneOf(ctx)
	h, err := e.Acquire(ctx, scope, lane, lease.AcquireOptions{Priority: prio, Wait: c.cfg.Wait, Require: c.cfg.Mode == ModeRequire, Confirm: confirm})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// database/sql and go-sqlite3 return the context's error itself,
		// and callers compare it with ==; the detail goes to the log.
		c.log.DebugContext(context.WithoutCancel(ctx), "cleolease: gave up waiting for the writer lease", "err", err)
		return nil, ctx.Err()
	}
	return h, c.writeErr(err)
}

// Lease is a hold on one lane kept across several transactions (the
// original's withWriterLease). Transactions and statements made with the
// context from Context re-enter it instead of waiting for it.
type Lease struct {
	h *lease.Hold
}

// Epoch is the lease's fencing token (0 when the grant is degraded).
func (l *Lease) Epoch() int64 { return l.h.Epoch() }

// Degraded reports a grant made without the lease (mode local, wait bound).
func (l *Lease) Degraded() bool { return l.h.Degraded() }

// Held reports, without I/O, whether the lease is still believed held.
func (l *Lease) Held() bool { return l.h.Held() }

// Check asks the database whether the lease is still held: nil, or an
// error wrapping ErrLeaseLost.
func (l *Lease) Check(ctx context.Context) error { return l.h.Check(ctx) }

// Context returns ctx carrying the lease, for the writes made under it.
func (l *Lease) Context(ctx context.Context) context.Context { return lease.WithHold(ctx, l.h) }

// Release ends the hold; later calls do nothing.
func (l *Lease) Release() { l.h.Release() }

// AcquireLease takes the lease of ctx's lane (WithLane, else the DSN
// defaults) on db and keeps it until Release. Errors: ErrLeaseUnavailable
// (mode require, in a *LeaseError), the context's error, ErrNotCleolease,
// or ErrNoLease (mode off, read-only, or a WithoutLease context).
func AcquireLease(ctx context.Context, db *sql.DB) (*Lease, error) {
	c, err := connectorOf(ctx, db)
	if err != nil {
		return nil, err
	}
	h, err := c.acquire(ctx, nil)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("%w: the context opts out of the lease (WithoutLease)", ErrNoLease)
	}
	return &Lease{h: h}, nil
}

// WithWriterLease holds the lease of ctx's lane on db while fn runs; fn's
// context carries it, so transactions inside re-enter it.
func WithWriterLease(ctx context.Context, db *sql.DB, fn func(ctx context.Context, l *Lease) error) error {
	l, err := AcquireLease(ctx, db)
	if err != nil {
		return err
	}
	defer l.Release()
	return fn(l.Context(ctx), l)
}

// connectorOf finds the cleolease connector behind db and makes sure its
// lease engine is open.
func connectorOf(ctx context.Context, db *sql.DB) (*Connector, error) {
	d, ok := db.Driver().(*Driver)
	if !ok || d.c == nil {
		return nil, fmt.Errorf("%w: its driver is %T", ErrNotCleolease, db.Driver())
	}
	if !d.c.leased() {
		return nil, fmt.Errorf("%w: this database's writes take none (mode off, read-only, or a private in-memory or temporary database)", ErrNoLease)
	}
	if d.c.Engine() == nil {
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		conn.Close()
		if d.c.Engine() == nil {
			// SQLite opened the file read-only: no engine (readonly.go).
			return nil, fmt.Errorf("%w: SQLite opened this database read-only", ErrNoLease)
		}
	}
	return d.c, nil
}

// Stats returns the lease counters of db's file in this process. Errors:
// ErrNotCleolease, ErrNoLease, or the error of opening db's first
// connection.
func Stats(ctx context.Context, db *sql.DB) (LeaseStats, error) {
	c, err := connectorOf(ctx, db)
	if err != nil {
		return LeaseStats{}, err
	}
	return c.Engine().Stats(), nil
}

// Break releases (scope, lane) of db's file on behalf of an administrator:
// the holder is fenced (its next fenced commit fails with ErrLeaseLost) and
// the lane goes to the next waiter. A provably live holder is refused with
// a *LeaseError wrapping ErrHolderAlive unless force. It returns the
// broken holder, or nil if the lane was free; ErrNotCleolease and
// ErrNoLease as Stats.
func Break(ctx context.Context, db *sql.DB, scope, lane string, force bool) (*HolderStatus, error) {
	c, err := connectorOf(ctx, db)
	if err != nil {
		return nil, err
	}
	return c.Engine().Break(ctx, scope, lane, force)
}

// Status returns every lane of db's file: holder (alive or dead and why),
// epoch, queue in grant order. It writes nothing. Errors as Stats.
func Status(ctx context.Context, db *sql.DB) ([]LaneStatus, error) {
	c, err := connectorOf(ctx, db)
	if err != nil {
		return nil, err
	}
	return c.Engine().Status(ctx)
}
