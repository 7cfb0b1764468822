package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// AcquireOptions are the per-call settings of Acquire.
type AcquireOptions struct {
	// Priority orders the cross-process queue: lower is served first.
	Priority int
	// Wait bounds the wait for a grant; at the bound Acquire degrades
	// (Require false) or fails with ErrUnavailable (Require true). A
	// context deadline or cancellation is never turned into either.
	Wait time.Duration
	// Require selects failing over degrading at the wait bound.
	Require bool
	// Confirm, when set, is the connection on which the caller opens its
	// write transaction right after Acquire. A waiter told of its grant by
	// datagram then opens that transaction itself (BEGIN IMMEDIATE) and
	// confirms the grant inside it before Acquire returns: the Hold
	// reports Begun, and its FenceBegin passes without a second read. A
	// datagram the row does not confirm is rolled back and the wait goes
	// on. nil: the grant is read on the engine's connection, and the
	// caller begins its transaction itself.
	Confirm Confirmer
}

// Acquire waits for the writer lease of (scope, lane) and returns a Hold.
//
// If ctx carries a live Hold on the same lane (WithHold), the result
// re-enters it at once. Otherwise the caller queues behind earlier writers
// of this process, then — unless this process still holds the row — behind
// earlier waiters of other processes. Errors: ctx.Err() wrapped in *Error
// when the context ends first (no queue row is left behind and no grant is
// made); *Error wrapping ErrUnavailable at the wait bound when
// opts.Require; ErrFileChanged when the file was replaced; ErrUntrusted
// for tables it cannot trust. At the wait bound without Require the result
// is a degraded Hold (Degraded() true, Epoch 0), logged and counted —
// except on a replicated file (Options.Replicated), where it is
// ErrUnavailable as with Require.
func (e *Engine) Acquire(ctx context.Context, scope, lane string, opts AcquireOptions) (*Hold, error) {
	if root := holdFrom(ctx, e, scope, lane); root != nil {
		root.l.mu.Lock()
		root.l.held.nestLocked()
		root.l.mu.Unlock()
		return &Hold{l: root.l, g: root.g, root: root}, nil
	}
	if e.isClosed() {
		return nil, e.errf("acquire", scope, lane, ErrClosed, "")
	}
	e.followIfDue() // a removed sidecar, reported by the file watch (sidecarfollow.go)
	if err := e.checkFile(false); err != nil {
		return nil, err
	}
	if _, inline := opts.Confirm.(InlineConfirmer); !inline {
		// A caller that may claim inside its own transaction leaves both to
		// ensureRow: an inline claim needs neither (see claimInline).
		e.listenLate()
		e.sweepIfDue(ctx) // before this lane is known (Options.TablesReady)
	}
	l := e.lane(scope, lane)
	if g := l.enterHeld(); g != nil {
		e.stats.Grants.Add(1)
		e.stats.FastGrants.Add(1)
		e.stats.observeWait(0)
		h := &Hold{l: l, g: g, gateHeld: true}
		if observed() {
			h.at = time.Now()
			Emit(Event{Kind: WaitEnded, Path: e.path, Scope: scope, Lane: lane,
				Waiters: l.waiting.Load(), Outcome: OutcomeGranted})
		}
		return h, nil
	}
	bound := &waitBound{wait: opts.Wait}
	defer bound.stop()
	l.waitStarted()
	h, err := l.wait(ctx, bound, opts)
	l.waitEnded(bound.waited(), h, err)
	if h != nil && observed() {
		h.at = time.Now()
	}
	return h, err
}

// wait is Acquire's way when the lane's row is not this process's to
// re-use at once: through the gate, then ensureRow.
func (l *laneState) wait(ctx context.Context, bound *waitBound, opts AcquireOptions) (*Hold, error) {
	e := l.e
	if err := l.enter(ctx, bound, int64(opts.Priority)); err != nil {
		if err == errWaitBound {
			return l.unavailable(ctx, opts, false, bound.waited())
		}
		return nil, l.ctxErr(err, bound.waited())
	}
	g, claimed, begun, err := l.ensureRow(ctx, bound, opts)
	if err != nil {
		if err == errWaitBound {
			return l.unavailable(ctx, opts, true, bound.waited())
		}
		l.leave()
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, l.ctxErr(err, bound.waited())
		}
		return nil, err
	}
	l.mu.Lock()
	l.held.beginLocked()
	l.mu.Unlock()
	e.stats.Grants.Add(1)
	e.stats.observeWait(bound.waited())
	return &Hold{l: l, g: g, gateHeld: true, claimed: claimed, begun: begun}, nil
}

// enterHeld is Acquire's fast path, under one lock: when the gate is open
// (unowned, and not handed over in order: gate.openLocked — a writer
// queued for it may be passed, as sync.Mutex lets a running goroutine
// pass its woken waiter) and this process still holds the row (not known
// lost), it takes the gate, starts the hold (depth 1) and returns the
// row; otherwise nil, and Acquire takes the way through enter and
// ensureRow.
func (l *laneState) enterHeld() *grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held.turn.arrive(time.Now(), !l.gate.freeLocked())
	g := l.held.row
	if l.closing || !l.gate.openLocked() || g == nil || g.lost.Load() {
		return nil
	}
	l.gate.takeLocked()
	l.held.beginLocked()
	return g
}

// enter waits for the lane's gate (gate.go), queued behind this
// process's earlier writers of the lane: it never barges ahead of them
// (only enterHeld does, when this process holds the row and the writer
// can commit at once). A writer that comes here may have to claim the row
// from another process, holding the gate while it waits: taking the gate
// ahead of a sibling then would keep that sibling waiting for another
// round of the other processes' turns.
func (l *laneState) enter(ctx context.Context, bound *waitBound, priority int64) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return l.e.errf("acquire", l.scope, l.lane, ErrClosed, "")
	}
	if l.gate.freeLocked() {
		l.gate.takeLocked()
		l.gateArrival = 0
		l.mu.Unlock()
		return nil
	}
	var arrival int64
	if l.gate.fifo && l.e.locks != nil {
		// A FIFO lane's writer is counted from its arrival here (fifo.go):
		// its ticket, taken without the lane's lock (a file operation).
		l.mu.Unlock()
		arrival = l.e.locks.NextTicket()
		l.mu.Lock()
		if l.closing {
			l.mu.Unlock()
			return l.e.errf("acquire", l.scope, l.lane, ErrClosed, "")
		}
		if l.gate.freeLocked() {
			l.gate.takeLocked()
			l.gateArrival = arrival
			l.mu.Unlock()
			return nil
		}
	}
	w := l.gate.joinLocked(time.Now())
	w.priority, w.arrival, w.enqueued = priority, arrival, l.e.nowMS()
	for {
		ch := w.ch
		l.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-bound.C():
			err = errWaitBound
		}
		l.mu.Lock()
		if err != nil {
			if l.gate.quitLocked(w) { // handed the gate, or woken to it, as we gave up: pass it on
				l.leaveLocked()
			}
			l.mu.Unlock()
			return err
		}
		if l.gate.arriveLocked(w, time.Now()) {
			l.gateArrival = w.arrival
			l.mu.Unlock()
			return nil
		}
	}
}

// ensureRow makes this process the holder of the lane's row; the caller
// owns the gate. begun reports a grant confirmed inside the transaction
// the claim opened on opts.Confirm (left open for the caller).
func (l *laneState) ensureRow(ctx context.Context, bound *waitBound, opts AcquireOptions) (g *grant, claimed, begun bool, err error) {
	if g := l.currentRow(); g != nil {
		if !g.lost.Load() {
			l.e.stats.FastGrants.Add(1)
			return g, false, false, nil
		}
		l.setRow(nil)
	}
	if l.e.opts.MemoryOnly {
		g := &grant{epoch: l.epochs.next(), at: time.Now()}
		l.setRow(g)
		return g, false, false, nil
	}
	if err := l.e.CheckFile(); err != nil {
		return nil, false, false, err
	}
	l.e.followIfDue() // before the claim announces its want (sidecarfollow.go)
	if ic, ok := opts.Confirm.(InlineConfirmer); ok {
		if g := l.claimInline(ctx, ic); g != nil {
			// Not the lane's row yet: Fencing.EndInline decides (inline.go).
			return g, true, true, nil
		}
		l.e.listenLate()
		l.e.sweepIfDue(ctx)
	}
	g, begun, err = l.claim(ctx, bound.C(), opts)
	if err != nil {
		return nil, false, false, err
	}
	l.setRow(g)
	l.e.logf(slog.LevelDebug, "cleolease: lease acquired", "scope", l.scope, "lane", l.lane, "epoch", g.epoch)
	return g, true, begun, nil
}

// ctxErr is Acquire's error when its context ended after it waited for
// waited. The caller may hand on only ctx.Err() (database/sql's callers
// compare it with ==), so the file, lane and holder also go to the log
// and the Abandoned counter.
func (l *laneState) ctxErr(err error, waited time.Duration) error {
	l.e.stats.Abandoned.Add(1)
	who := l.waitedOn()
	l.e.logf(slog.LevelDebug, "cleolease: wait ended by its context", "scope", l.scope, "lane", l.lane,
		"waited", waited, "holder", who, "err", err)
	return l.e.errf("acquire", l.scope, l.lane, err, "context ended while waiting")
}

// unavailable ends a wait that reached opts.Wait after waited: an
// ErrUnavailable in mode require and on a replicated file
// (Options.Replicated: never a degraded grant there, see takeover.go),
// else a degraded Hold, logged at warning level with the file, the lane,
// the wait and the holder waited on.
func (l *laneState) unavailable(ctx context.Context, opts AcquireOptions, gateHeld bool, waited time.Duration) (*Hold, error) {
	who := l.waitedOn()
	if opts.Require || l.e.opts.Replicated {
		if gateHeld {
			l.leave()
		}
		l.e.stats.Unavailable.Add(1)
		why := fmt.Sprintf("mode=require: a live holder did not release within %s", opts.Wait)
		if !opts.Require {
			why = fmt.Sprintf("a holder that looks alive did not release within %s, and on a replicated file (LiteFS) no write goes ahead without the lease: the holder may be a former primary's process, alive on another node", opts.Wait)
		}
		err := l.e.errf("acquire", l.scope, l.lane, ErrUnavailable, why)
		err.Holder = who
		return nil, err
	}
	l.e.stats.Degraded.Add(1)
	l.e.logf(slog.LevelWarn, "cleolease: degraded grant: proceeding without the writer lease",
		"scope", l.scope, "lane", l.lane, "waited", waited, "wait", opts.Wait, "holder", who)
	return &Hold{l: l, gateHeld: gateHeld}, nil
}
