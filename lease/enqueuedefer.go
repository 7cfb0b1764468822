package lease

// A waiter that registered with the live holder writes its own queue row
// only after selfEnqueueAfter without a hand-off of the lane (see
// claimRun.run and await): while the lane is handed on, the holders carry
// the waiter's registration in their grants and order it (Pass, handOff),
// so the row would add nothing but a write transaction per wait — one
// replicated transaction per commit on LiteFS once waits pass
// selfEnqueueAfter under contention, each of which also sends the next
// hand-off to a transaction of its own (a queue row rules out the Pass).
// A lane that stops moving (its holder stopped, or holding long) still
// gets the row after selfEnqueueAfter; a holder that dies rings the
// waiter (exit watch), which then claims at once.

// progressed reports whether the lane's row r shows a hand-off since the
// claim's last look — its epoch moved on, to another holder — and notes
// r. A holder that released the lane and took it again (its epoch moved,
// its id did not) carried no registration: it may never have had this
// waiter's (a lost datagram), and a release forwards none to itself. Taken
// for progress, such a move put the queue row off at every look while the
// waiter stayed unknown to every hand-off (issue 28: found by the
// simulation's starvation check).
func (c *claimRun) progressed(r *row) bool {
	moved := c.seenEpoch != 0 && r.epoch != c.seenEpoch && r.h.ID != c.seenHolder
	c.seenEpoch, c.seenHolder = r.epoch, r.h.ID
	return moved
}
