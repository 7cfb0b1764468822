package lease

// Strict arrival order across processes (Options.Slice 0). A lane with no
// slice serves its writers in the order they arrived, wherever they run
// (issue 38 item 6): a writer of this process queued at the lane's gate
// behind the holder is served before a writer of another process that
// arrived after it, and after one that arrived before it. Each writer that
// queues at such a lane's gate takes the database's arrival ticket
// (platform.Arrivals) at once, as a claim does before it registers; its
// claim, if it has to make one, registers with that ticket. When the
// holder's turn ends (keepTurn, release) the lane stays with this process
// while its first queued writer comes first in the order of the waiters
// (order: effective priority, then arrival) among the other processes'
// registrations; it goes to them otherwise — and whenever some process
// announces a wait without having registered yet (its arrival is not
// known here: it arrived after none of this process's writers can be
// proven).

// fifoLocalFirst reports whether, on a FIFO lane, the first writer
// queued at this process's gate comes before every waiter of another
// process (see the top of this file). False on a lane with a slice, with
// no writer queued, or when a waiting process has not registered. The
// wants are counted without the lane's lock (a file operation); the
// caller does not hold it.
func (l *laneState) fifoLocalFirst() bool {
	l.mu.Lock()
	head := l.gate.headLocked()
	candidate := l.gate.fifo && l.e.locks != nil && head != nil && head.arrival != 0
	l.mu.Unlock()
	if !candidate {
		return false
	}
	wants, err := l.e.locks.CountWants(l.want, 1000)
	if err != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	head = l.gate.headLocked()
	if head == nil || head.arrival == 0 || wants > len(l.inbox.pending) {
		return false
	}
	ws := []queued{{priority: head.priority, enqueued: head.enqueued, arrival: head.arrival,
		h: holder{ID: l.e.holderID}}}
	for _, r := range l.inbox.pending {
		if r.Arrival == 0 {
			return false
		}
		ws = append(ws, queued{priority: r.Priority, enqueued: r.Enqueued, arrival: r.Arrival, h: holder{ID: r.ID}})
	}
	order(ws, l.e.nowMS())
	return ws[0].h.ID == l.e.holderID
}
