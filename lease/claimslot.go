package lease

// claimSlot is what the rest of a lane knows of its claim in progress
// (the claim's own state is its claimRun, which only the claim's
// goroutine touches): whether a claim runs, whether a grant datagram
// reached it, and the holder the lane's last claim found keeping the lane.
// Its fields are guarded by the lane's mu: a grant datagram
// (grantArrived) and a registration (registered) are judged by the slot
// and the held row under that one lock.
type claimSlot struct {
	running  bool   // a claim is in progress
	incoming bool   // a grant datagram for it arrived
	waitedOn string // the holder the last claim found keeping the lane, for errors
}

// beginLocked records a claim starting.
func (s *claimSlot) beginLocked() { s.running = true }

// endLocked records the claim ending, granted or not: a grant datagram
// that reached a claim which got no grant is forgotten.
func (s *claimSlot) endLocked(granted bool) {
	s.running = false
	if !granted {
		s.incoming = false
	}
}

// grantArrivedLocked records a grant datagram for the claim in progress
// and reports true, or reports false when no claim runs.
func (s *claimSlot) grantArrivedLocked() bool {
	if !s.running {
		return false
	}
	s.incoming = true
	return true
}

// settledLocked forgets a grant datagram: the grant was taken (or the
// lane given up), or the row did not confirm it (a real grant arriving
// later rings again).
func (s *claimSlot) settledLocked() { s.incoming = false }

// grantIncoming reports whether a grant datagram for this lane reached
// the claim in progress (see grantArrived).
func (l *laneState) grantIncoming() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claimSlot.incoming
}

// waitedOn is the holder the lane's last claim found keeping the lane
// ("" if none), for Acquire's errors and logs.
func (l *laneState) waitedOn() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claimSlot.waitedOn
}
