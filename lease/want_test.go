package lease

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// busyWants is liveness evidence whose first wants fail, as a want does on
// Windows while a peer's test holds the lane's want region
// (platform.Locks.SetWant).
type busyWants struct {
	platform.Locks
	fails *atomic.Int32 // wants still to fail
}

func (b busyWants) SetWant(base int64, on bool) error {
	if on && b.fails.Add(-1) >= 0 {
		return errors.New("lock held elsewhere")
	}
	return b.Locks.SetWant(base, on)
}

// failWants makes the first n wants of the engines opened from now on fail
// (a child's CLEOLEASE_FAIL_WANTS).
func failWants(n int32) {
	fails := new(atomic.Int32)
	fails.Store(n)
	openLocks = func(db string, mode fs.FileMode, slot int64) (platform.Locks, error) {
		l, err := platform.OpenLocks(db, mode, slot)
		if l == nil || err != nil {
			return l, err
		}
		return busyWants{l, fails}, nil
	}
}

// A waiter whose want could not be taken at first announces it later: the
// holder sees it wait (so it lingers for it, and the hand-off does not
// skip it and delete its queue row) and hands it the lane.
func TestWantAnnouncedAfterFailure(t *testing.T) {
	path := newDB(t)
	ctx := context.Background()
	holder := openEngine(t, path, nil)
	if holder.locks == nil {
		t.Skip("no liveness locks in this directory")
	}
	h, err := holder.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Minute, Require: true})
	if err != nil {
		t.Fatal(err)
	}
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=child", "CLEOLEASE_FAIL_WANTS=2")
	l := holder.lane("s", "l")
	eventually(t, "the waiter's want after its first two failed", func() bool { return l.othersWaiting(ctx) })
	if err := fencedWrite(ctx, rawDB(t, path), h, "parent"); err != nil {
		t.Fatal(err)
	}
	h.Release()
	w.expect("granted")
	if err := w.wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
}
