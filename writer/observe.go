package writer

import "github.com/cleocode/cleolease/lease"

// Event is one thing a lease engine of this process did that an Observer
// counts or times: a wait for the lease that started or ended (with its
// duration and outcome, and the number of this process's waiters for the
// lane), a hold that ended, a hand-off, a reclaim, a lost lease, a
// migration run. Path, Scope and Lane are the user's names, so their
// cardinality is the user's. Holder ids are never in an Event.
type Event = lease.Event

// EventKind names what an Event reports (WaitStarted, WaitEnded,
// HoldEnded, HandedOff, Reclaimed, Lost, MigrationsRun).
type EventKind = lease.EventKind

// Observer receives the Events of every cleolease engine in the process,
// whatever its base driver, once registered with AddObserver.
// ObserveLease is called on the goroutine that did the work, sometimes
// under the lane's internal lock: it must return quickly and must not use
// the database. The nested module github.com/cleocode/cleolease/otel is
// an Observer that records OpenTelemetry metrics.
type Observer = lease.Observer

// The kinds of Event; each one's doc in package lease says what its
// Duration, Waiters and Outcome hold.
const (
	WaitStarted   = lease.WaitStarted   // an Acquire started to wait (Waiters: this process's, after it)
	WaitEnded     = lease.WaitEnded     // an Acquire ended (Duration: the wait; Outcome: how)
	HoldEnded     = lease.HoldEnded     // a grant was released (Duration: the hold; Outcome "released" or "lost")
	HandedOff     = lease.HandedOff     // this process handed the lane directly to a waiter
	Reclaimed     = lease.Reclaimed     // this process reclaimed the lane (Outcome "dead", "ttl" or "unknown")
	Lost          = lease.Lost          // a grant of this process was found lost
	MigrationsRun = lease.MigrationsRun // this process ran migrations under the cold-open lease (Outcome "ok" or "error")
)

// The outcomes of an Event (Event.Outcome).
const (
	OutcomeGranted     = lease.OutcomeGranted     // WaitEnded: the lease is held
	OutcomeDegraded    = lease.OutcomeDegraded    // WaitEnded: _lease_wait passed; the write went ahead without the lease
	OutcomeUnavailable = lease.OutcomeUnavailable // WaitEnded: _lease_wait passed; ErrLeaseUnavailable
	OutcomeCanceled    = lease.OutcomeCanceled    // WaitEnded: the context was cancelled
	OutcomeDeadline    = lease.OutcomeDeadline    // WaitEnded: the context's deadline passed
	OutcomeError       = lease.OutcomeError       // WaitEnded, MigrationsRun: another error
	OutcomeReleased    = lease.OutcomeReleased    // HoldEnded
	OutcomeLost        = lease.OutcomeLost        // HoldEnded: the grant had been found lost
	OutcomeOK          = lease.OutcomeOK          // MigrationsRun
)

// AddObserver makes o receive the Events of every cleolease engine in the
// process — those open now and those opened later, over any base — until
// the returned function is called (calling it again does nothing). With no
// Observer registered an event costs one atomic load.
func AddObserver(o Observer) (remove func()) { return lease.AddObserver(o) }
