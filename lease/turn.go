package lease

import "time"

// minTurnCommits is the fewest commits a turn keeps the lane for while
// more of the process's work follows, even past the slice (a slice of 0
// still means strict FIFO). Where a commit takes longer than the slice —
// on a LiteFS mount a commit is replicated in SQLite's unlock, ~3 ms —
// each turn would otherwise carry one commit and pay one hand-off; two
// halve that, and the turn stays proportional to the work, so fairness
// holds.
const minTurnCommits = 2

// returnGrace is how long a holder whose turn goes on (within its slice)
// keeps the lane, once its hold ended, for this process's writer to come
// back before the linger watcher hands the lane off. A writer that runs
// transactions back to back returns within microseconds; the watcher's
// timer fires about a millisecond late on a loaded machine anyway (see
// docs/BENCHMARKS.md, "The slice"), so this is a floor, not a promise.
const returnGrace = 250 * time.Microsecond

// turn is this process's time with a lane while another process waits:
// whether a commit inside the slice keeps the lane for more of this
// process's work — queued at the gate, or a writer that comes straight
// back — and how long the lane waits for that writer once a hold ends.
// It predicts a returning writer from the last gap between a release and
// the next arrival; a writer that did not come back within returnGrace
// makes the next turn hand over inside its commit again. Its fields are
// guarded by the lane's mu.
type turn struct {
	grace       time.Duration // returnGrace (tests lengthen it)
	lastRelease time.Time     // when this process's last hold of the lane ended
	returns     bool          // the last arrival came within returnGrace of a release, or while the gate was owned
	keptAt      time.Time     // when a hold ended with the turn kept for a returning writer (zero: not kept)
	commits     int           // commits that kept the lane since this process got the row
}

// arrive records a first acquisition arriving at now; busy says that the
// gate was owned then (the writer queues behind work of this process).
func (t *turn) arrive(now time.Time, busy bool) {
	t.returns = busy || (!t.lastRelease.IsZero() && now.Sub(t.lastRelease) < t.grace)
	t.keptAt = time.Time{}
}

// keep reports whether a commit inside the slice keeps the lane: more
// work of this process waits at the gate (queued), or its writer is
// expected back.
func (t *turn) keep(queued bool) bool { return queued || t.returns }

// release records a hold ending at now; kept says that its commit kept the
// turn (Hold.inTurn), so the lane waits returnGrace for the writer.
func (t *turn) release(now time.Time, kept bool) {
	t.lastRelease = now
	t.keptAt = time.Time{}
	if kept {
		t.keptAt = now
	}
}

// graceLeft is how much longer, at now, the lane waits for a returning
// writer before it is handed off (0: no longer, or no turn was kept).
func (t *turn) graceLeft(now time.Time) time.Duration {
	if t.keptAt.IsZero() {
		return 0
	}
	return max(0, t.grace-now.Sub(t.keptAt))
}

// missed records that the grace ended with the gate still free: the
// writer did not come back, so the next turn hands over in its commit.
func (t *turn) missed() {
	if !t.keptAt.IsZero() {
		t.returns = false
		t.keptAt = time.Time{}
	}
}

// started begins the turn of a grant this process just got.
func (t *turn) started() { t.commits = 0 }

// keepTurn reports whether the commit being made under g keeps the lane
// for more of this process's work (turn.keep), counting it as a commit of
// the turn when it does: while g is inside its slice, or the turn has
// kept fewer than minTurnCommits commits; never with a slice of 0.
func (l *laneState) keepTurn(g *grant) bool {
	if l.e.opts.Slice <= 0 {
		return l.fifoLocalFirst() // strict arrival order (fifo.go)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held.turn.keep(l.gate.queuedLocked()) {
		return false
	}
	if !l.inSlice(g) && l.held.turn.commits+1 >= minTurnCommits {
		return false
	}
	l.held.turn.commits++
	return true
}
