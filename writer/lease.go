package writer

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cleocode/cleolease/internal/leasectx"
	"github.com/cleocode/cleolease/lease"
)

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
	h, err := c.Acquire(ctx)
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
func connectorOf(ctx context.Context, db *sql.DB) (leasectx.Connector, error) {
	c, ok := leasectx.Find(db.Driver())
	if !ok {
		return nil, fmt.Errorf("%w: its driver is %T", ErrNotCleolease, db.Driver())
	}
	if !c.Leased() {
		return nil, fmt.Errorf("%w: this database's writes take none (mode off, read-only, or a private in-memory or temporary database)", ErrNoLease)
	}
	if c.Engine() == nil {
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		conn.Close()
		if c.Engine() == nil {
			// SQLite opened the file read-only: no engine.
			return nil, fmt.Errorf("%w: SQLite opened this database read-only", ErrNoLease)
		}
	}
	return c, nil
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
