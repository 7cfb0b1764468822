package lease

import "time"

// waitBound is Acquire's wait bound (AcquireOptions.Wait, counted from the
// call's start), armed only when a wait begins: the fast path (gate free,
// row held) creates no timer.
type waitBound struct {
	start time.Time
	wait  time.Duration // < 0: no bound
	t     *time.Timer
}

// C returns the channel that fires at start+wait, arming the timer on the
// first call; nil (never fires) when there is no bound.
func (b *waitBound) C() <-chan time.Time {
	if b.wait < 0 {
		return nil
	}
	if b.t == nil {
		b.t = time.NewTimer(max(0, b.wait-time.Since(b.start)))
	}
	return b.t.C
}

// stop releases the timer, if armed.
func (b *waitBound) stop() {
	if b.t != nil {
		b.t.Stop()
	}
}
