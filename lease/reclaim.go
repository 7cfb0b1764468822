package lease

// Whether a lane's active row, held by another process, may be taken
// over: its holder is dead, unknown past its TTL, or (StealAfterTTL) past
// its TTL.

import (
	"fmt"
)

// reclaimable reports whether an active row of another holder may be
// taken over, and why.
func (l *laneState) reclaimable(r *row) (bool, string) {
	v := l.e.probe(r.h)
	if v.elsewhere && l.e.bell.absent(r.h.ID, l.scope, l.lane) {
		// Alive, but not on this file: no liveness lock in its liveness
		// files, no doorbell for it (a copy of the file opened beside its
		// original, which the holder has open; a file restored from a
		// backup of another file). It will never hand the lane on here.
		v = deadBecause(v.reason + ", and no doorbell of it on this file: it runs on another file (a copy or a restore)")
	}
	info := fmt.Sprintf("%s (pid %d, epoch %d): %s", r.h.ID, r.h.PID, r.epoch, v.reason)
	l.mu.Lock()
	l.claimSlot.waitedOn = info // read by waiters that give up at the gate
	l.mu.Unlock()
	return reclaimDecision(v, l.e.nowMS(), r.heartbeat, r.ttl, l.e.opts.TTL.Milliseconds(), l.e.opts.StealAfterTTL)
}

// reclaimDecision decides whether a lane whose holder got verdict v may be
// reclaimed at now (milliseconds, as heartbeat_at), given the row's
// heartbeat_at and ttl_ms (defTTL, the engine's TTL in milliseconds,
// stands in for a row without one), and why: "dead" for a provably gone
// holder; "unknown" for a holder the OS would not tell about, once its
// heartbeat is older than its TTL (a live holder beats every TTL/3, so it
// is not robbed; a dead one does not block the lane for ever); "ttl" for
// any holder under the StealAfterTTL policy, likewise. Otherwise it waits.
func reclaimDecision(v verdict, now, heartbeat, ttl, defTTL int64, stealAfterTTL bool) (bool, string) {
	if v.dead() {
		return true, "dead"
	}
	if ttl <= 0 {
		ttl = defTTL
	}
	expired := ttl > 0 && now-heartbeat > ttl
	switch {
	case !v.alive() && expired:
		return true, "unknown"
	case stealAfterTTL && expired:
		return true, "ttl"
	}
	return false, ""
}
