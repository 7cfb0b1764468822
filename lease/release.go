package lease

// The end of a first acquisition's Hold: the lane is handed to a waiting
// process, kept for this process's next writer within the slice, or left
// to linger, and the gate passes to the next writer of this process.

import (
	"context"
	"time"
)

// release ends a first-acquisition Hold.
func (l *laneState) release(h *Hold) {
	if h.g != nil && h.g.inline.Load() {
		l.endInline(h.g) // its transaction did not reach EndInline
	}
	l.mu.Lock()
	row := l.held.endLocked()
	closing := l.closing
	l.mu.Unlock()
	if !h.gateHeld {
		return
	}
	g := h.g
	recall := false
	if g != nil {
		g.gatherFrom(time.Now())
	}
	if g != nil && !g.lost.Load() && row == g && !l.e.opts.MemoryOnly {
		others := l.othersWaiting(context.Background())
		switch {
		case others && !h.inTurn.Load() && !l.inSlice(g) && !g.gathering(time.Now()) && !l.fifoLocalFirst():
			l.handOff(g, "handed off")
		case closing && !l.hasWaiters():
			// Granted to a claim that ran while the engine closed: no
			// linger watcher runs any more to pass it on (shutdown).
			l.handOff(g, "released at close")
		case others:
			// (An inline grant still gathering its waiters' registrations
			// is handed off by the watcher too: see gather.)
			// The row stays within its slice for this process's next
			// writer, queued at the gate or arriving at once (a turn is a
			// time budget): the watcher, woken by leave, hands the lane
			// off once it finds the gate free — at once, or, when this
			// hold's commit kept the turn for a writer expected back
			// (turn.go), after that writer's grace — so an idle holder
			// keeps nobody waiting long. A hold whose commit was judged within
			// the slice (inTurn) counts as within it here too, although
			// the slice may have ended during its COMMIT: the next
			// writer's commit then carries the grant (Fencing.Pass)
			// instead of a hand-off transaction now.
			recall = true
		case l.e.opts.Linger <= 0 && !l.hasWaiters():
			l.handOff(g, "released")
		}
		// Otherwise the row lingers while nobody waits: the watcher's
		// timer releases it after Linger idle, and a waiter that arrives
		// meanwhile rings the doorbell (tryEnter).
	}
	l.mu.Lock()
	if recall {
		l.watcher.askLocked()
	}
	l.held.turn.release(time.Now(), recall && h.inTurn.Load())
	l.leaveLocked()
	l.mu.Unlock()
}

// inSlice reports whether this process may keep the lane for more of its
// own work although another process waits: for at most Slice after it got
// the row (0: never, strict FIFO).
func (l *laneState) inSlice(g *grant) bool {
	return l.e.opts.Slice > 0 && time.Since(g.at) < l.e.opts.Slice
}
