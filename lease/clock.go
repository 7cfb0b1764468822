package lease

import "time"

// Clock is the engine's source of wall-clock time. Lease rows store
// milliseconds since the Unix epoch taken from it (heartbeat_at,
// acquired_at, enqueued_at). Waiting and back-off use the process's
// monotonic clock; no liveness decision depends on wall-clock time unless
// the TTL-steal policy is chosen. Tests inject a Clock to step time.
type Clock interface {
	Now() time.Time
}

// SystemClock is the Clock of the real world.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
