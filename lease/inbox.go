package lease

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"sync/atomic"
	"time"
)

// inbox keeps, for a lane this process holds, the registrations of other
// processes' waiters (each told this process that it waits: see
// registration) until a hand-off orders them or passes them on; it
// remembers to whom this process last passed the lane, so that late
// registrations follow it, and counts the requests to look that reach
// this process's claim. pending and passedTo are guarded by the lane's mu
// (registered keeps or forwards a registration by the held row, under the
// same lock); looks is atomic.
type inbox struct {
	pending  map[string]registration // waiters that told us they wait, by holder id
	passedTo string                  // the holder this process last handed the lane to ("": none since it held it)
	// passed is that holder, with its pid and epoch, when the hand-off
	// was written inside a data commit (Pass), whose transaction checked
	// it was alive and waiting; zero otherwise. A claim of this process
	// registers with it without reading the row (claimRun.ringPassed).
	passed passedGrant
	looks  atomic.Int64 // requests to look at this lane (see lookArrived)
}

// passedGrant is a grant this process just wrote for another holder.
type passedGrant struct {
	to    holder
	epoch int64
	at    time.Time // when the commit that carried it returned
}

// addLocked keeps r, unless a newer registration of its waiter is kept:
// a forwarded registration may arrive after a newer one of the same
// waiter (arrival tickets only grow).
func (b *inbox) addLocked(r registration) {
	if b.pending == nil {
		b.pending = map[string]registration{}
	}
	if old, ok := b.pending[r.ID]; !ok || old.Arrival <= r.Arrival {
		b.pending[r.ID] = r
	}
}

// emptyLocked reports whether no registration is kept.
func (b *inbox) emptyLocked() bool { return len(b.pending) == 0 }

// takeLocked removes and returns the registrations kept, in holder-id
// order (not the map's random one, so that a seeded simulation replays
// the same steps: sim_test.go).
func (b *inbox) takeLocked() []registration {
	regs := make([]registration, 0, len(b.pending))
	for _, id := range slices.Sorted(maps.Keys(b.pending)) {
		regs = append(regs, b.pending[id])
	}
	b.pending = nil
	return regs
}

// restoreLocked keeps regs again, unless a newer registration of the same
// waiter arrived meanwhile.
func (b *inbox) restoreLocked(regs []registration) {
	if len(regs) == 0 {
		return
	}
	if b.pending == nil {
		b.pending = map[string]registration{}
	}
	for _, r := range regs {
		if _, ok := b.pending[r.ID]; !ok {
			b.pending[r.ID] = r
		}
	}
}

// registered records a waiter's registration (see registration) while
// this process holds the lane or is being granted it, or when it came
// with a grant to this process (withGrant); otherwise it passes it on to
// the process it handed the lane to (once), or tells the waiter to look
// again. A registration that this implementation would not send (no
// liveness slot matching its id, no start identity) is dropped, and one
// for a lane this process never used creates no state (the doorbell only
// listens to processes of this user, but a datagram is never trusted to
// size this process's memory).
func (e *Engine) registered(r registration, withGrant bool) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if r.ID == e.holderID || r.Slot <= 0 || r.Slot != slotFor(r.ID) || r.Start == "" {
		return // not a registration this implementation sends
	}
	l := e.knownLane(r.Scope, r.Lane)
	if closed || l == nil {
		// This process is going, or never used the lane (so it cannot
		// hold it): the waiter looks elsewhere. A row that names this
		// process there nonetheless (a restored or copied file's) is
		// released (sweepStale).
		if !closed {
			e.startSweep()
		}
		e.bell.ringLook(r.ID, r.Scope, r.Lane)
		return
	}
	l.mu.Lock()
	if l.held.row == nil && !l.claimSlot.incoming && !withGrant {
		// This process does not hold the lane: if it just handed it on,
		// the registration follows the lane once; otherwise the waiter
		// is told to look, and registers with the holder it finds. The
		// waiter found this process named by the lane's row: a row that
		// names it without being its grant (a restored or copied file's)
		// is released (checkStale), so that the waiter does not look at it
		// for ever.
		to := l.inbox.passedTo
		l.mu.Unlock()
		l.checkStale()
		if to != "" && !r.Forwarded {
			r.Forwarded = true
			if e.bell.ringWaiting(to, r) {
				return
			}
		}
		e.bell.ringLook(r.ID, r.Scope, r.Lane)
		return
	}
	l.inbox.addLocked(r)
	l.mu.Unlock()
}

// grantArrived records that a grant of (scope, lane) to this process is
// on its way to the claim waiting for it (see registered). A grant that
// reaches no claim (its caller gave up) rings the lane's settle
// (settle.go), which reads the row and adopts the lane if it is ours, so
// that it does not stay with this process unknown to it. One settle
// goroutine at most runs per lane: datagrams that arrive meanwhile cost
// it one more read (a forged one, say: the Windows mailslot is writable by
// everyone).
func (e *Engine) grantArrived(scope, lane string) {
	l := e.knownLane(scope, lane)
	if l == nil {
		return // never claimed here
	}
	l.mu.Lock()
	if l.claimSlot.grantArrivedLocked() || l.held.row != nil || l.closing {
		l.mu.Unlock()
		return // the claim, the row held or the close takes care of it
	}
	start := l.settler.ringLocked()
	l.mu.Unlock()
	if start && !l.startSettle() {
		l.settleHere()
	}
}

// lookArrived records a request to look at (scope, lane) again, sent by a
// process that had this process's registration but does not hold the
// lane, and wakes the waiters.
func (e *Engine) lookArrived(scope, lane string) {
	if l := e.knownLane(scope, lane); l != nil {
		l.inbox.looks.Add(1)
	}
}

// takePending removes and returns the registrations this process holds
// (inbox.takeLocked).
func (l *laneState) takePending() []registration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inbox.takeLocked()
}

// restorePending puts regs back among the registrations this process
// holds (inbox.restoreLocked).
func (l *laneState) restorePending(regs []registration) {
	if len(regs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inbox.restoreLocked(regs)
}

// flushPending writes the queue rows of live waiters that registered with
// this process and have none yet; the caller is inside BEGIN IMMEDIATE.
func (l *laneState) flushPending(ctx context.Context, c *sql.Conn) error {
	regs := l.takePending()
	now := l.e.nowMS()
	for _, r := range regs {
		h := holder{ID: r.ID, PID: r.PID, Start: r.Start, Slot: r.Slot}
		if !l.waits(h, false) {
			continue
		}
		if err := enqueue(ctx, c, l.scope, l.lane, r, now); err != nil {
			return err
		}
	}
	return nil
}

// forwardPending passes the registrations this process holds (those its
// hand-off did not serve, and those that arrived meanwhile) on to the new
// holder to, which orders them at its own hand-off; otherwise they would
// wait for this process's next one. When the lane was released instead
// (to is ""), their waiters are told to look: the lane is free to claim.
// They go in holder-id order (takePending).
func (l *laneState) forwardPending(to string) {
	for _, r := range l.takePending() {
		h := holder{ID: r.ID, PID: r.PID, Start: r.Start, Slot: r.Slot}
		switch {
		case r.ID == to || !l.waits(h, false):
			// Served, gave up, or gone.
		case to == "":
			l.e.bell.ringLook(r.ID, r.Scope, r.Lane)
		default:
			r.Forwarded = true
			l.e.bell.ringWaiting(to, r)
		}
	}
}
