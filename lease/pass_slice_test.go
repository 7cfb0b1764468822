package lease

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Tests of how the slice (Options.Slice) bears on the hand-off inside the
// holder's last data transaction (Fencing.Pass).

// holdLaneSliced is holdLane with a slice no test outlasts.
func holdLaneSliced(t *testing.T) (*Engine, string, *Hold) {
	t.Helper()
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger, o.Slice = 0, time.Hour })
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	return e, path, h
}

// TestPassInsideTheSliceWithNothingQueued: a holder still inside its slice
// but with no more of its own work queued at the lane's gate hands over
// inside its commit (the driver's default slice is 2 ms, longer than a
// short transaction: refusing the Pass there sent the hand-off to a
// transaction of its own, a replicated one on LiteFS) — the engine writes
// no transaction of its own.
func TestPassInsideTheSliceWithNothingQueued(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLaneSliced(t)
	db := rawDB(t, path)
	epoch := h.Epoch()
	w := startChild(t, "pass-confirm-wait", path, "CLEOLEASE_NAME=waiter")
	waitRegistered(t, e, 1)
	before := e.Stats()
	passTx(t, db, h, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	h.Release()
	expectGranted(t, w, epoch+1, 0)
	after := e.Stats()
	if after.LeaseWrites != before.LeaseWrites || after.PassedInCommit != 1 || after.Handoffs != 1 {
		t.Fatalf("stats %+v after %+v: want the hand-off inside the data commit, no transaction of the engine's", after, before)
	}
}

// TestPassKeepsTheSliceForQueuedWork: with more of this process's work
// queued at the gate and the slice not over, the commit does not hand
// over (Pass returns nil and writes nothing): the slice keeps the lane
// for that work.
func TestPassKeepsTheSliceForQueuedWork(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLaneSliced(t)
	db := rawDB(t, path)
	w := startChild(t, "pass-confirm-wait", path, "CLEOLEASE_NAME=waiter")
	waitRegistered(t, e, 1)
	ctx := context.Background()
	local := make(chan error, 1)
	go func() {
		h2, err := e.Acquire(ctx, "s", "l", req)
		if err == nil {
			h2.Release()
		}
		local <- err
	}()
	l := e.lane("s", "l")
	for !l.hasWaiters() {
		runtime.Gosched() // until the local writer is queued at the gate
	}
	checkedTx(t, db, h, "", func(c *sqlite3.SQLiteConn, f *Fencing) error {
		defer c.ExecContext(ctx, "ROLLBACK", nil)
		if p, err := f.Pass(ctx, c); p != nil || err != nil {
			return fmt.Errorf("Pass: %v, %v (want none: the slice keeps the lane for the queued writer)", p, err)
		}
		return nil
	})
	h.Release()
	if err := <-local; err != nil {
		t.Fatal(err)
	}
	w.expect("granted")
}
