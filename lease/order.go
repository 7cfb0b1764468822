package lease

import (
	"slices"
	"sort"
	"time"
)

// agingStep is how fast a waiter's effective priority improves: one point
// per agingStep waited. A waiter of priority p is therefore overtaken by
// newcomers of a better priority q < p for at most (p-q)·agingStep (plus
// the service time of those already ahead of it), e.g. 10 s for the
// default 100 against a cold open's 0.
const agingStep = 100 * time.Millisecond

// queued is a waiter: a _writer_queue row, or a registration the holder
// received that has no row (ticket 0, row false).
type queued struct {
	ticket, priority, enqueued, ttl int64
	arrival                         int64 // 0 when the row has none
	h                               holder
	foreign                         bool // written by another implementation (no holder_pid)
	row                             bool // has a _writer_queue row
}

// order sorts waiters into grant order: effective priority (priority minus
// one point per agingStep waited), then arrival (the arrival counter taken
// when the waiter arrived) where both rows have one, else ticket.
func order(ws []queued, nowMS int64) {
	eff := func(w queued) int64 {
		waited := nowMS - w.enqueued
		if waited < 0 {
			waited = 0
		}
		return w.priority - waited/agingStep.Milliseconds()
	}
	sort.SliceStable(ws, func(i, j int) bool {
		a, b := eff(ws[i]), eff(ws[j])
		if a != b {
			return a < b
		}
		if ws[i].arrival > 0 && ws[j].arrival > 0 {
			return ws[i].arrival < ws[j].arrival
		}
		return ws[i].ticket < ws[j].ticket
	})
}

// withRegistrations adds to the queue rows ws the registrations of waiters
// that have none.
func withRegistrations(ws []queued, regs []registration) []queued {
	for _, r := range regs {
		if !slices.ContainsFunc(ws, func(w queued) bool { return w.h.ID == r.ID }) {
			ws = append(ws, queued{priority: r.Priority, enqueued: r.Enqueued, ttl: r.TTL, arrival: r.Arrival,
				h: holder{ID: r.ID, PID: r.PID, Start: r.Start, Slot: r.Slot}})
		}
	}
	return ws
}

// pick sorts ws into grant order (order) and chooses the waiter to serve:
// the index of the first one, -1 when none, and the indexes of the waiters
// passed over before it because serves said no (dead, or alive but no
// longer waiting: granting to one would leave the lane with a holder that
// does not know it holds it). Another implementation's waiters (foreign)
// are passed over without a judgement — they poll and race for a free row
// by themselves — and this process (self) is always served. serves is
// called in grant order, and not after the chosen waiter.
func pick(ws []queued, nowMS int64, self string, serves func(queued) bool) (first int, skipped []int) {
	order(ws, nowMS)
	for i, w := range ws {
		switch {
		case w.foreign:
		case w.h.ID == self:
			return i, skipped
		case !serves(w):
			skipped = append(skipped, i)
		default:
			return i, skipped
		}
	}
	return -1, skipped
}
