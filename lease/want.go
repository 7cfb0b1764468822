package lease

import (
	"context"
	"hash/fnv"
	"log/slog"

	"github.com/cleocode/cleolease/internal/platform"
)

// wantBase is the start of the lane's want region (see wantBits).
func wantBase(scope, lane string) int64 {
	h := fnv.New64a()
	h.Write([]byte(scope + "\x00" + lane))
	return 1<<47 + int64(h.Sum64()%(1<<16))<<wantBits
}

// Each lane has a want region of 1<<wantBits slots (bytes of the sidecar
// on Linux and Windows, files of a directory in the portable tier); a
// waiting process holds a lock on its own slot of it (its liveness slot)
// for as long as it claims the lane (platform.Locks.SetWant). A holder
// tests the whole region to learn that someone waits, and one waiter's
// slot to learn that this waiter still waits.
const wantBits = platform.WantBits

// stillWaiting reports whether the waiter h is still claiming the lane:
// whether it holds its want. When that cannot be told (no liveness locks,
// no slot, a failed test), a waiter known from its queue row (fromRow) is
// given the benefit of the doubt; one known only from its registration (a
// datagram) is not.
func (l *laneState) stillWaiting(h holder, fromRow bool) bool {
	if l.e.locks == nil || h.Slot <= 0 {
		return fromRow
	}
	w, err := l.e.locks.Wants(l.want, h.Slot)
	if err != nil {
		return fromRow
	}
	return w
}

// lockWant / unlockWant announce to holders in other processes, through
// the lane's want region, that this process waits. A want that could not
// be taken (on Windows a peer's test of the region holds it for a moment,
// see platform.Locks.SetWant) is tried again before each claim
// transaction and each look at the lane, so that a queued waiter does not
// stay unannounced: the hand-off would find it no longer waiting
// (stillWaiting), skip it and delete its queue row.
func (c *claimRun) lockWant() {
	l := c.l
	if l.e.locks == nil || c.wantLocked {
		return
	}
	if err := l.e.locks.SetWant(l.want, true); err != nil {
		l.e.logf(slog.LevelDebug, "cleolease: want not announced yet", "scope", l.scope, "lane", l.lane, "err", err)
		return
	}
	c.wantLocked = true
}

func (c *claimRun) unlockWant() {
	l := c.l
	c.rung, c.rungEpoch, c.registered = "", 0, false
	c.stopExitWatch()
	if c.wantLocked {
		l.e.locks.SetWant(l.want, false)
		c.wantLocked = false
	}
}

// othersWaiting reports whether another process waits for this lane.
// The liveness locks answer without touching SQLite; without them, the
// queue does.
func (l *laneState) othersWaiting(ctx context.Context) bool {
	if l.e.locks != nil {
		if w, err := l.e.locks.AnyWants(l.want); err == nil {
			return w
		}
	}
	return l.queueHasOthers(ctx)
}
