package lease

import (
	"sync/atomic"
	"time"
)

// Stats are the engine's counters since it opened. All fields are safe for
// concurrent use; read them with Snapshot.
type Stats struct {
	Grants      atomic.Int64 // holds granted (first acquisitions, not re-entries)
	FastGrants  atomic.Int64 // grants served from a row this process still held (no SQLite write)
	Claims      atomic.Int64 // claim transactions that made this process the holder
	Handoffs    atomic.Int64 // lanes this process handed directly to a waiter
	Degraded    atomic.Int64 // degraded grants (mode local, wait bound reached)
	Unavailable atomic.Int64 // ErrUnavailable returned (mode require)
	Lost        atomic.Int64 // grants found lost (heartbeat, check, fence, release)
	Fenced      atomic.Int64 // commits refused by the fencing check
	ReclaimDead atomic.Int64 // rows reclaimed from dead holders
	ReclaimTTL  atomic.Int64 // rows reclaimed by the opt-in TTL policy
	DeadWaiters atomic.Int64 // waiters skipped at a committed hand-off because they died or gave up
	Breaks      atomic.Int64 // administrative breaks
	waitBuckets [len(WaitBuckets) + 1]atomic.Int64
}

// WaitBuckets are the upper bounds of the wait-time histogram.
var WaitBuckets = [...]time.Duration{
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
	100 * time.Millisecond, time.Second, 10 * time.Second,
}

func (s *Stats) observeWait(d time.Duration) {
	i := 0
	for i < len(WaitBuckets) && d > WaitBuckets[i] {
		i++
	}
	s.waitBuckets[i].Add(1)
}

func (s *Stats) reclaimed(why string) {
	if why == "ttl" {
		s.ReclaimTTL.Add(1)
	} else {
		s.ReclaimDead.Add(1)
	}
}

// StatsSnapshot is a copy of Stats. Waits[i] counts grants that waited at
// most WaitBuckets[i]; the last element counts longer waits.
type StatsSnapshot struct {
	Grants, FastGrants, Claims, Handoffs, Degraded, Unavailable int64
	Lost, Fenced, ReclaimDead, ReclaimTTL, DeadWaiters, Breaks  int64
	Waits                                                       [len(WaitBuckets) + 1]int64
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() StatsSnapshot {
	s := &e.stats
	out := StatsSnapshot{
		Grants: s.Grants.Load(), FastGrants: s.FastGrants.Load(), Claims: s.Claims.Load(),
		Handoffs: s.Handoffs.Load(), Degraded: s.Degraded.Load(), Unavailable: s.Unavailable.Load(),
		Lost: s.Lost.Load(), Fenced: s.Fenced.Load(), ReclaimDead: s.ReclaimDead.Load(),
		ReclaimTTL: s.ReclaimTTL.Load(), DeadWaiters: s.DeadWaiters.Load(), Breaks: s.Breaks.Load(),
	}
	for i := range s.waitBuckets {
		out.Waits[i] = s.waitBuckets[i].Load()
	}
	return out
}
