package lease

import "time"

// waitBound is Acquire's wait bound (AcquireOptions.Wait), counted from
// the moment Acquire first has to wait (at the in-process gate, or to
// claim the row): the fast path (gate free, row held) reads no clock and
// creates no timer.
type waitBound struct {
	wait  time.Duration // < 0: no bound
	start time.Time     // when the wait began; zero while Acquire has not waited
	t     *time.Timer
}

// C starts the wait, if it has not started, and returns the channel that
// fires at start+wait, arming the timer on the first call; nil (never
// fires) when there is no bound.
func (b *waitBound) C() <-chan time.Time {
	if b.start.IsZero() {
		b.start = time.Now()
	}
	if b.wait < 0 {
		return nil
	}
	if b.t == nil {
		b.t = time.NewTimer(max(0, b.wait-time.Since(b.start)))
	}
	return b.t.C
}

// waited is how long Acquire has waited: 0 when it never had to.
func (b *waitBound) waited() time.Duration {
	if b.start.IsZero() {
		return 0
	}
	return time.Since(b.start)
}

// stop releases the timer, if armed.
func (b *waitBound) stop() {
	if b.t != nil {
		b.t.Stop()
	}
}

// IdleBound is the engine's liveness bound: while a live process waits for
// a lane and no process holds it, a waiter is granted the lane within
// IdleBound, under the assumptions the package documentation lists
// ("What the engine guarantees"). It is a promise of the protocol, not a
// setting; the simulation and the chaos ledger check it.
const IdleBound = time.Second
