package lease

import "time"

// Clock is the engine's source of wall-clock time. Lease rows store
// milliseconds since the Unix epoch taken from it (heartbeat_at,
// acquired_at, enqueued_at, deadline_at), and the queue's aging and the
// TTL-steal decision read it. Waiting, back-off, linger and slice use the
// process's monotonic clock; no liveness decision depends on wall-clock
// time unless the TTL-steal policy is chosen, so without it no clock step
// can rob a live holder or keep a dead one.
//
// Under StealAfterTTL a waiter compares its clock with the heartbeat_at the
// holder wrote with its own: the processes' clocks must agree to within
// TTL − TTL/3. A forward step of a waiter's clock, or a backward step of
// the holder's, by more than that makes a live holder look hung and it is
// robbed (fenced: it can no longer commit); a backward step of the
// waiter's, or a forward step of the holder's, delays the steal of a hung
// holder by the step. Dead holders are reclaimed at once regardless. See
// clock_test.go. Tests inject a Clock to step time.
type Clock interface {
	Now() time.Time
}

// SystemClock is the Clock of the real world.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
