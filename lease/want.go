package lease

import (
	"context"
	"hash/fnv"
)

// wantBase is the first byte of the lane's region of want bytes in the
// sidecar (see wantBits).
func wantBase(scope, lane string) int64 {
	h := fnv.New64a()
	h.Write([]byte(scope + "\x00" + lane))
	return 1<<47 + int64(h.Sum64()%(1<<16))<<wantBits
}

// Each lane has a region of 1<<wantBits bytes in the sidecar; a waiting
// process holds a shared lock on its own byte of it (chosen by its
// liveness slot) for as long as it claims the lane. A holder tests the
// whole region to learn that someone waits, and one waiter's byte to learn
// that this waiter still waits.
const wantBits = 46

func (l *laneState) wantByte(slot int64) int64 { return l.want + slot }

// stillWaiting reports whether the waiter h is still claiming the lane:
// whether it holds its want byte. When that cannot be told (no sidecar,
// no slot, a failed test), a waiter known from its queue row (fromRow) is
// given the benefit of the doubt; one known only from its registration (a
// datagram) is not.
func (l *laneState) stillWaiting(h holder, fromRow bool) bool {
	if l.e.side == nil || h.Slot <= 0 {
		return fromRow
	}
	w, err := l.e.side.rangeLocked(l.wantByte(h.Slot), 1)
	if err != nil {
		return fromRow
	}
	return w
}

// lockWant / unlockWant announce to holders in other processes, through a
// shared lock on the lane's byte of the sidecar, that this process waits.
func (c *claimRun) lockWant() {
	l := c.l
	if l.e.side == nil || c.wantLocked {
		return
	}
	if l.e.side.setLock(l.wantByte(l.me().Slot), true) == nil {
		c.wantLocked = true
	}
}

func (c *claimRun) unlockWant() {
	l := c.l
	c.rung, c.rungEpoch, c.registered = "", 0, false
	if c.wantLocked {
		l.e.side.setLock(l.wantByte(l.me().Slot), false)
		c.wantLocked = false
	}
}

// othersWaiting reports whether another process waits for this lane.
// The sidecar answers without touching SQLite; without one, the queue does.
func (l *laneState) othersWaiting(ctx context.Context) bool {
	if l.e.side != nil {
		if w, err := l.e.side.rangeLocked(l.want, 1<<wantBits); err == nil {
			return w
		}
	}
	return l.queueHasOthers(ctx)
}
