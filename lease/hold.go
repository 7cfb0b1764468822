package lease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"sync/atomic"
)

// Hold is one caller's share of a lane's lease, from Acquire to Release.
// A Hold obtained while the context already carries a Hold on the same
// (engine, scope, lane) is re-entrant: it shares the outer grant and epoch
// and only counts depth. Release is keyed by the Hold itself, so releasing
// twice is a no-op and can never free another caller's share.
type Hold struct {
	l        *laneState
	g        *grant // nil when degraded
	root     *Hold  // nil for a first acquisition
	gateHeld bool
	claimed  bool // this acquisition claimed the row (vs. reusing a lingering one)
	released atomic.Bool
}

// Scope and Lane name the lane this Hold is on.
func (h *Hold) Scope() string { return h.l.scope }

// Lane is the lane name.
func (h *Hold) Lane() string { return h.l.lane }

// Epoch is the fencing token of the grant (strictly increasing per
// (scope, lane) in the file, never reused), or 0 for a degraded grant.
func (h *Hold) Epoch() int64 {
	if h.g == nil {
		return 0
	}
	return h.g.epoch
}

// Degraded reports a grant made without the lease (mode local, after the
// wait bound): the work runs unleased and unfenced. A degraded Hold never
// satisfies Held.
func (h *Hold) Degraded() bool { return h.g == nil }

// Claimed reports whether this acquisition had to claim the row through
// the queue (another process held or wanted the lane recently), as opposed
// to reusing a row this process still held. Callers use it to expect
// competition for SQLite's write lock.
func (h *Hold) Claimed() bool { return h.claimed }

// reentrant reports whether this Hold re-entered an outer one.
func (h *Hold) reentrant() bool { return h.root != nil }

// Held reports, from memory and without I/O, whether this Hold still
// believes it holds the lease: not released, not degraded, not known lost.
// Check asks the database.
func (h *Hold) Held() bool {
	return !h.released.Load() && h.g != nil && !h.g.lost.Load()
}

// Check asks the database whether (holder, epoch) is still the active row
// of the lane: nil, or an *Error wrapping ErrLost (the grant is then marked
// lost, so every later fenced commit fails too). One indexed point read on
// the engine's connection.
func (h *Hold) Check(ctx context.Context) error {
	if h.g == nil {
		return h.l.e.errf("check", h.l.scope, h.l.lane, ErrUnavailable, "degraded grant holds no lease")
	}
	if h.l.e.opts.MemoryOnly {
		return nil
	}
	if h.g.lost.Load() {
		return h.lostErr("check")
	}
	if err := h.l.e.fault("check"); err != nil {
		return err
	}
	var one int
	err := h.l.e.retryBusy(ctx, func() error {
		return h.l.e.db.QueryRowContext(ctx, fenceSQL, h.l.scope, h.l.lane, h.l.e.holderID, h.g.epoch).Scan(&one)
	})
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			h.l.markLost(h.g, "check found another holder")
			return h.lostErr("check")
		}
		return err
	}
	return nil
}

// fenceSQL is the fencing check Fence runs: it returns one row exactly when
// (holder_id, epoch) is the active row of (scope, lane). Its arguments are
// scope, lane, holder id, epoch.
const fenceSQL = `SELECT 1 FROM _writer_leases WHERE scope = ? AND lane = ? AND active = 1 AND holder_id = ? AND epoch = ?`

// Fence runs the fencing check on q — the caller's connection, inside the
// write transaction it is about to commit — so that the check and the
// commit are atomic: nil means the commit may proceed; an *Error wrapping
// ErrLost means it must roll back. A degraded or in-memory grant always
// passes (it has nothing to fence). Fence sends q one query text for every
// Hold of an Engine (with four or five positional arguments), so q may
// prepare the first query it receives once per connection and run that
// statement for every later call.
func (h *Hold) Fence(ctx context.Context, q driver.QueryerContext) error {
	if h.g == nil || h.l.e.opts.MemoryOnly {
		return nil
	}
	if h.g.lost.Load() {
		h.l.e.stats.Fenced.Add(1)
		return h.lostErr("commit")
	}
	if err := h.l.e.fault("fence"); err != nil {
		return err
	}
	query, args := fenceSQL, []driver.NamedValue{
		{Ordinal: 1, Value: h.l.scope}, {Ordinal: 2, Value: h.l.lane},
		{Ordinal: 3, Value: h.l.e.holderID}, {Ordinal: 4, Value: h.g.epoch},
	}
	if h.l.e.opts.StealAfterTTL {
		// Under the TTL-steal policy a long transaction would end with a
		// stale heartbeat; refresh it in the same transaction as the data.
		query, args = fenceRefreshSQL, []driver.NamedValue{
			{Ordinal: 1, Value: h.l.e.nowMS()}, {Ordinal: 2, Value: h.l.scope}, {Ordinal: 3, Value: h.l.lane},
			{Ordinal: 4, Value: h.l.e.holderID}, {Ordinal: 5, Value: h.g.epoch},
		}
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != nil {
		return err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	err = rows.Next(dest)
	rows.Close()
	if err == io.EOF {
		h.l.markLost(h.g, "fenced commit found another holder")
		h.l.e.stats.Fenced.Add(1)
		return h.lostErr("commit")
	}
	return err
}

func (h *Hold) lostErr(op string) error {
	e := h.l.e.errf(op, h.l.scope, h.l.lane, ErrLost, "the lane was broken, reclaimed or handed over")
	e.Epoch = h.g.epoch
	return e
}

// Release ends this Hold. The first Release of a first acquisition lets
// the next writer of the lane in this process go, and hands the row to a
// waiting process (or lets it linger while nobody waits). Further calls do
// nothing.
func (h *Hold) Release() {
	if !h.released.CompareAndSwap(false, true) {
		return
	}
	l := h.l
	if h.root != nil {
		l.mu.Lock()
		l.depth--
		l.mu.Unlock()
		return
	}
	l.release(h)
}

type holdsKey struct{}

type holdNode struct {
	h    *Hold
	next *holdNode
}

// WithHold returns a context carrying h, so that Acquire with that context
// (and every leased statement the driver runs with it) re-enters h instead
// of waiting for it.
func WithHold(ctx context.Context, h *Hold) context.Context {
	next, _ := ctx.Value(holdsKey{}).(*holdNode)
	return context.WithValue(ctx, holdsKey{}, &holdNode{h: h, next: next})
}

// holdFrom returns the live Hold the context carries for (e, scope, lane),
// or nil.
func holdFrom(ctx context.Context, e *Engine, scope, lane string) *Hold {
	for n, _ := ctx.Value(holdsKey{}).(*holdNode); n != nil; n = n.next {
		h := n.h
		if h.root != nil {
			h = h.root
		}
		if h.l.e == e && h.l.scope == scope && h.l.lane == lane && !h.released.Load() {
			return h
		}
	}
	return nil
}

// fenceRefreshSQL is the fencing check under the TTL-steal policy: it also
// refreshes heartbeat_at, inside the caller's transaction.
const fenceRefreshSQL = `UPDATE _writer_leases SET heartbeat_at = ? WHERE scope = ? AND lane = ? AND active = 1 AND holder_id = ? AND epoch = ? RETURNING 1`
