package lease

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind names what an Event reports.
type EventKind int

const (
	// WaitStarted: an Acquire found it could not be served from a row
	// this process still holds, and started to wait (in this process's
	// gate, then for the row). Waiters counts it.
	WaitStarted EventKind = iota + 1
	// WaitEnded: an Acquire ended, after Duration, with Outcome one of
	// OutcomeGranted, OutcomeDegraded, OutcomeUnavailable,
	// OutcomeCanceled, OutcomeDeadline or OutcomeError. A grant served
	// at once from a row this process still held is a WaitEnded with
	// Duration 0 and no WaitStarted before it.
	WaitEnded
	// HoldEnded: a first (not re-entered) grant was released after
	// Duration; Outcome is OutcomeReleased, or OutcomeLost when the grant
	// had been found lost.
	HoldEnded
	// HandedOff: this process handed the lane directly to a waiter.
	HandedOff
	// Reclaimed: this process reclaimed the lane from a holder that had
	// died (Outcome "dead"), whose heartbeat passed the opt-in TTL
	// ("ttl"), or that the OS would not tell about once its heartbeat was
	// older than its TTL ("unknown").
	Reclaimed
	// Lost: a grant of this process was found lost (broken, taken over,
	// its row removed, the file replaced).
	Lost
	// MigrationsRun: this process ran migrations under the cold-open
	// lease (scope "cleolease", lane "migrate"), for Duration; Outcome is
	// OutcomeOK or OutcomeError.
	MigrationsRun
)

// The outcomes an Event reports (Event.Outcome).
const (
	OutcomeGranted     = "granted"     // WaitEnded: the lease is held
	OutcomeDegraded    = "degraded"    // WaitEnded: the wait bound passed; going ahead without the lease
	OutcomeUnavailable = "unavailable" // WaitEnded: the wait bound passed; ErrUnavailable
	OutcomeCanceled    = "canceled"    // WaitEnded: the context was cancelled
	OutcomeDeadline    = "deadline"    // WaitEnded: the context's deadline passed
	OutcomeError       = "error"       // WaitEnded, MigrationsRun: another error
	OutcomeReleased    = "released"    // HoldEnded
	OutcomeLost        = "lost"        // HoldEnded: the grant had been lost
	OutcomeOK          = "ok"          // MigrationsRun
)

// Event is one thing a lease engine did that an Observer counts or
// times. Path, Scope and Lane are the user's names: their cardinality is
// the user's.
type Event struct {
	Kind EventKind
	// Path is the engine's database file (resolved, as Engine.Path).
	Path        string
	Scope, Lane string
	// Duration is the wait (WaitEnded), the hold (HoldEnded) or the
	// migration run (MigrationsRun); 0 otherwise.
	Duration time.Duration
	// Waiters is, for WaitStarted and WaitEnded, the number of Acquire
	// calls of this process waiting for the lane once this one started
	// or ended: a gauge whose sum over processes is the lane's waiters.
	Waiters int64
	// Outcome says how a wait, hold or migration run ended, or why a
	// lane was reclaimed; "" for the other kinds.
	Outcome string
}

// Observer receives the Events of every lease engine in the process
// (AddObserver). ObserveLease is called on the goroutine that did the
// work, sometimes with the lane's internal lock held: it must return
// quickly and must not use the database.
type Observer interface {
	ObserveLease(Event)
}

var (
	observersMu sync.Mutex
	observers   atomic.Pointer[[]Observer] // nil: none (one atomic load per event)
)

// AddObserver makes o receive the Events of every engine in the process
// until the returned function is called (it may be called more than once).
func AddObserver(o Observer) (remove func()) {
	observersMu.Lock()
	defer observersMu.Unlock()
	next := []Observer{o}
	if cur := observers.Load(); cur != nil {
		next = append(slices.Clone(*cur), o)
	}
	observers.Store(&next)
	var once sync.Once
	return func() {
		once.Do(func() {
			observersMu.Lock()
			defer observersMu.Unlock()
			cur := observers.Load()
			if cur == nil {
				return
			}
			next := slices.Clone(*cur)
			if i := slices.Index(next, o); i >= 0 {
				next = slices.Delete(next, i, i+1)
			}
			if len(next) == 0 {
				observers.Store(nil)
				return
			}
			observers.Store(&next)
		})
	}
}

// observed reports whether any Observer is registered.
func observed() bool { return observers.Load() != nil }

// Emit hands ev to every registered Observer. Packages outside the engine
// that run under a lease (migrate) report their own Events with it.
func Emit(ev Event) {
	obs := observers.Load()
	if obs == nil {
		return
	}
	for _, o := range *obs {
		o.ObserveLease(ev)
	}
}

// emit reports an Event of kind k about lane l.
func (l *laneState) emit(k EventKind, d time.Duration, outcome string) {
	if !observed() {
		return
	}
	Emit(Event{Kind: k, Path: l.e.path, Scope: l.scope, Lane: l.lane, Duration: d, Outcome: outcome})
}

// waitStarted counts an Acquire that waits for the lane (see WaitStarted).
func (l *laneState) waitStarted() {
	n := l.waiting.Add(1)
	if observed() {
		Emit(Event{Kind: WaitStarted, Path: l.e.path, Scope: l.scope, Lane: l.lane, Waiters: n})
	}
}

// waitEnded counts the end of a wait waitStarted counted, after d, as
// hold and err say: a hold (degraded or not) or the error.
func (l *laneState) waitEnded(d time.Duration, h *Hold, err error) {
	n := l.waiting.Add(-1)
	if observed() {
		Emit(Event{Kind: WaitEnded, Path: l.e.path, Scope: l.scope, Lane: l.lane, Duration: d,
			Waiters: n, Outcome: waitOutcome(h, err)})
	}
}

// waitOutcome is the Outcome of an Acquire that returned h and err.
func waitOutcome(h *Hold, err error) string {
	switch {
	case err == nil && h != nil && h.g == nil:
		return OutcomeDegraded
	case err == nil:
		return OutcomeGranted
	case errors.Is(err, ErrUnavailable):
		return OutcomeUnavailable
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeDeadline
	}
	return OutcomeError
}

// countHandoff counts a lane this process handed directly to a waiter.
func (l *laneState) countHandoff() {
	l.e.stats.Handoffs.Add(1)
	l.emit(HandedOff, 0, "")
}

// countReclaim counts a lane reclaimed from a holder, for why ("dead",
// "ttl", "unknown").
func (l *laneState) countReclaim(why string) {
	l.e.stats.reclaimed(why)
	if why != "ttl" && why != "unknown" {
		why = "dead"
	}
	l.emit(Reclaimed, 0, why)
}
