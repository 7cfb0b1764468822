package lease

// claimSlot is what the rest of a lane knows of its claim in progress
// (the claim's own state is its claimRun, which only the claim's
// goroutine touches): whether a claim runs or has just got its grant,
// whether a grant datagram reached it, and the holder the lane's last
// claim found keeping the lane. Its fields are guarded by the lane's mu:
// a grant datagram (grantArrived) and a registration (registered) are
// judged by the slot and the held row under that one lock.
type claimSlot struct {
	running  bool   // a claim is in progress
	granting bool   // the claim ended with a grant the lane has not recorded yet (setRow)
	incoming bool   // a grant datagram for it arrived
	waitedOn string // the holder the last claim found keeping the lane, for errors
	quit     int64  // claims ended without a grant so far
}

// beginLocked records a claim starting.
func (s *claimSlot) beginLocked() { s.running = true }

// endLocked records the claim ending, granted or not. A grant datagram
// that reached a claim which got no grant is forgotten, unless the lane
// settles (settling: see settle.go), which then decides: the grant it
// told of may be the one that claim's quit could not see yet.
func (s *claimSlot) endLocked(granted, settling bool) {
	s.running = false
	s.granting = granted
	if !granted {
		s.quit++
	}
	if !granted && !settling {
		s.incoming = false
	}
}

// nothingLateLocked reports whether the lane has nothing for a final
// settle (releaseLate) to find: no claim has ended without a grant, and
// (wants true) waiters announce themselves by want bytes, which every
// hand-off tests inside its transaction, so no grant can name this
// process but one a claim of it got (and recorded).
func (s *claimSlot) nothingLateLocked(wants bool) bool { return wants && s.quit == 0 }

// busyLocked reports whether a claim runs, or has ended with a grant that
// is not recorded as the row held yet: the lane's row is the claim's
// business, not the settle's.
func (s *claimSlot) busyLocked() bool { return s.running || s.granting }

// grantArrivedLocked records a grant datagram for the claim in progress
// (or just granted) and reports true, or reports false when there is
// none.
func (s *claimSlot) grantArrivedLocked() bool {
	if !s.busyLocked() {
		return false
	}
	s.incoming = true
	return true
}

// settledLocked forgets a grant datagram: the grant was taken (or the
// lane given up), or the row did not confirm it (the running claim goes
// on reading the row at its polls, which find a real grant whether or not
// its datagram rings again).
func (s *claimSlot) settledLocked() { s.incoming = false }

// recordedLocked records the lane's row set (setRow): a claim's grant is
// recorded, and its grant datagram settled.
func (s *claimSlot) recordedLocked() { s.granting, s.incoming = false, false }

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
