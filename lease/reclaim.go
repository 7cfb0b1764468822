package lease

// Whether a lane's active row, held by another process, may be taken
// over: its holder is dead, unknown past its TTL, or (StealAfterTTL) past
// its TTL.

import (
	"errors"
	"fmt"
	"syscall"
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
	if v.alive() && !v.elsewhere && r.h.Slot > 0 && r.h.Start != "" && l.refusedBy(r) && !l.e.os.holes.ignoreRefusal {
		// Alive on this file, but its engine here does not listen (its
		// doorbell refused this waiter's registration): nothing names a
		// process before it listens (listen.go; a grant claimed inside a
		// transaction is exposed only after it: Hold.Exposing), so the row
		// is not a grant of its engine — a restore brought it back, or an
		// engine of it that has closed left it. It would never hand the
		// lane on. Only for a row a cleolease engine wrote (its liveness
		// slot and holder_start): the original implementation's processes
		// have no doorbell at all.
		v = deadBecause(v.reason + ", but its doorbell on this file refused the registration: its engine here does not listen, so the row is not its grant (a restore brought it back, or its last engine left it)")
	}
	info := fmt.Sprintf("%s (pid %d, epoch %d): %s", r.h.ID, r.h.PID, r.epoch, v.reason)
	l.mu.Lock()
	l.claimSlot.waitedOn = info // read by waiters that give up at the gate
	l.mu.Unlock()
	return reclaimDecision(v, l.e.nowMS(), r.heartbeat, r.ttl, l.e.opts.TTL.Milliseconds(), l.e.opts.StealAfterTTL)
}

// ring registers this claim's waiter reg with the holder of r (the
// lane's active row), and reports whether the registration reached its
// engine's socket. A refusal (ECONNREFUSED: no doorbell of that holder on
// this file) is noted against r's holder and epoch (refusedBy).
func (l *laneState) ring(r *row, reg registration) bool {
	err := l.e.bell.ringWaitingErr(r.h.ID, reg)
	if errors.Is(err, syscall.ECONNREFUSED) {
		l.mu.Lock()
		l.refused = refusedRing{id: r.h.ID, epoch: r.epoch}
		l.mu.Unlock()
	}
	return err == nil
}

// refusedRing is the last row whose holder's doorbell refused a registration
// of this process's: its holder id and epoch.
type refusedRing struct {
	id    string
	epoch int64
}

// refusedBy reports whether the holder of r refused a registration while
// r named it at r's epoch (a later grant of that holder has another
// epoch, and was written after its engine listened).
func (l *laneState) refusedBy(r *row) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused.id == r.h.ID && l.refused.epoch == r.epoch
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
