package lease

import (
	"sync/atomic"
	"time"
)

// counters are the engine's counters since it opened, safe for concurrent
// use; Engine.Stats copies them.
type counters struct {
	Grants     atomic.Int64 // holds granted (first acquisitions, not re-entries)
	FastGrants atomic.Int64 // grants served from a row this process still held (no SQLite write)
	Claims     atomic.Int64 // claim transactions that made this process the holder
	// InlineClaims counts the claims written inside the caller's own
	// transaction (InlineConfirmer), a part of Claims.
	InlineClaims atomic.Int64
	Handoffs     atomic.Int64 // lanes this process handed directly to a waiter
	// PassedInCommit counts the hand-offs written inside the holder's last
	// data transaction (Pass), a part of Handoffs.
	PassedInCommit atomic.Int64
	// LeaseWrites counts the write transactions the engine committed on its
	// own connection (claims, hand-offs, queue rows, heartbeats, releases).
	LeaseWrites atomic.Int64
	// Confirmed counts grants a waiter confirmed inside the caller's
	// transaction on a grant datagram (Confirmer); HintsRefused the grant
	// datagrams the row did not confirm there.
	Confirmed, HintsRefused atomic.Int64
	Degraded                atomic.Int64 // degraded grants (mode local, wait bound reached)
	Unavailable             atomic.Int64 // ErrUnavailable returned (mode require)
	Lost                    atomic.Int64 // grants found lost (heartbeat, check, fence, release)
	Fenced                  atomic.Int64 // commits refused by the fencing check
	ReclaimDead             atomic.Int64 // rows reclaimed from dead holders
	ReclaimTTL              atomic.Int64 // rows reclaimed by the opt-in TTL policy
	// ReclaimUnknown counts rows reclaimed from holders the OS would not
	// tell about, once their heartbeat was older than their TTL.
	ReclaimUnknown atomic.Int64
	DeadWaiters    atomic.Int64 // waiters skipped at a committed hand-off because they died or gave up
	Breaks         atomic.Int64 // administrative breaks
	Abandoned      atomic.Int64 // waits ended by their context (cancelled or past its deadline)
	waitBuckets    [len(waitBounds) + 1]atomic.Int64
}

// waitBounds are the upper bounds of the wait-time histogram (Stats.Waits
// lists them in its doc comment).
var waitBounds = [...]time.Duration{
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
	100 * time.Millisecond, time.Second, 10 * time.Second,
}

func (s *counters) observeWait(d time.Duration) {
	i := 0
	for i < len(waitBounds) && d > waitBounds[i] {
		i++
	}
	s.waitBuckets[i].Add(1)
}

func (s *counters) reclaimed(why string) {
	switch why {
	case "ttl":
		s.ReclaimTTL.Add(1)
	case "unknown":
		s.ReclaimUnknown.Add(1)
	default:
		s.ReclaimDead.Add(1)
	}
}

// Stats is a copy of an engine's counters since it opened (Engine.Stats),
// each a count of events in this process:
type Stats struct {
	Grants     int64 // holds granted (first acquisitions, not re-entries)
	FastGrants int64 // grants served from a row this process still held (no SQLite write)
	Claims     int64 // claim transactions that made this process the holder
	Handoffs   int64 // lanes this process handed directly to a waiter
	// InlineClaims counts the claims of a free lane written inside the
	// caller's own write transaction, with the data (InlineConfirmer): a
	// part of Claims.
	InlineClaims int64
	// PassedInCommit counts the hand-offs written inside the holder's last
	// data transaction, with the data (no transaction of their own): a
	// part of Handoffs.
	PassedInCommit int64
	// LeaseWrites counts the write transactions the engine committed on its
	// own connection: claims, hand-offs, queue rows, heartbeats, releases
	// (each a replicated transaction on LiteFS).
	LeaseWrites int64
	// Confirmed counts grants a waiter confirmed inside the caller's own
	// write transaction, right after its BEGIN IMMEDIATE, on the grant's
	// datagram (AcquireOptions.Confirm); HintsRefused counts grant
	// datagrams the row did not confirm there (forged, stale or early: the
	// waiter rolled back and went on waiting).
	Confirmed, HintsRefused int64
	Degraded                int64 // degraded grants (mode local, wait bound reached)
	Unavailable             int64 // ErrUnavailable returned (mode require)
	Lost                    int64 // grants found lost (heartbeat, check, fence, release)
	Fenced                  int64 // commits refused by the fencing check
	ReclaimDead             int64 // rows reclaimed from dead holders
	ReclaimTTL              int64 // rows reclaimed by the opt-in TTL policy
	// ReclaimUnknown counts rows reclaimed from holders whose liveness the
	// OS would not tell (hidden, access denied), once their heartbeat was
	// older than their TTL.
	ReclaimUnknown int64
	DeadWaiters    int64 // waiters skipped at a committed hand-off because they died or gave up
	Breaks         int64 // administrative breaks
	// Abandoned counts the waits for a grant that ended because their
	// context did (cancelled or past its deadline); each is logged at debug
	// level, "cleolease: wait ended by its context", with the path, scope,
	// lane, time waited and the holder that kept the lane.
	Abandoned int64
	// TurnWaits counts the write transactions that waited for another
	// process's write turn (writeturn.go); TurnAdopted, the kernel waits a
	// writer took over from one whose context ended; TurnBypassed, the
	// writes that went on without the turn past a bound (busy_timeout for
	// another goroutine of the process, _lease_wait for another process).
	TurnWaits, TurnAdopted, TurnBypassed int64
	// Waits is a histogram of the time grants waited: Waits[i] counts the
	// grants that waited at most 100µs, 1ms, 10ms, 100ms, 1s and 10s for
	// i = 0 … 5; Waits[6] counts longer waits.
	Waits [len(waitBounds) + 1]int64
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	s := &e.stats
	out := Stats{
		Grants: s.Grants.Load(), FastGrants: s.FastGrants.Load(), Claims: s.Claims.Load(),
		Handoffs: s.Handoffs.Load(), Degraded: s.Degraded.Load(), Unavailable: s.Unavailable.Load(),
		Lost: s.Lost.Load(), Fenced: s.Fenced.Load(), ReclaimDead: s.ReclaimDead.Load(),
		ReclaimTTL: s.ReclaimTTL.Load(), DeadWaiters: s.DeadWaiters.Load(), Breaks: s.Breaks.Load(),
		Abandoned: s.Abandoned.Load(), ReclaimUnknown: s.ReclaimUnknown.Load(),
		PassedInCommit: s.PassedInCommit.Load(), LeaseWrites: s.LeaseWrites.Load(),
		Confirmed: s.Confirmed.Load(), HintsRefused: s.HintsRefused.Load(), InlineClaims: s.InlineClaims.Load(),
		TurnWaits: e.turn.waits.Load(), TurnAdopted: e.turn.adopted.Load(), TurnBypassed: e.turn.bypass.Load(),
	}
	for i := range s.waitBuckets {
		out.Waits[i] = s.waitBuckets[i].Load()
	}
	return out
}
