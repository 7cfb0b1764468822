package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

// TestEpochFloorSurvivesDroppedTablesAndClockStepBack: after the lease
// tables were dropped by a tool that took no lease, the engine recreates
// them at its next claim, and the lane's next epoch is above every earlier
// one even when the wall clock was stepped back meanwhile (the in-memory
// high-water mark; the clock floor alone would go back).
func TestEpochFloorSurvivesDroppedTablesAndClockStepBack(t *testing.T) {
	path := newDB(t)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newRelClock(t0)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0; o.Clock = clk })
	ctx := context.Background()
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	first := h.Epoch()
	if first < t0.UnixMicro() {
		t.Fatalf("a new lane's first epoch %d, want at least the clock floor %d", first, t0.UnixMicro())
	}
	h.Release()
	db := rawDB(t, path)
	if _, err := db.Exec(`DROP TABLE _writer_leases; DROP TABLE _writer_queue`); err != nil {
		t.Fatal(err)
	}
	clk.step(-time.Hour)
	h, err = e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatalf("acquire after the tables were dropped: %v", err)
	}
	defer h.Release()
	if h.Epoch() <= first {
		t.Fatalf("epoch %d after the drop and a clock step back, want above %d", h.Epoch(), first)
	}
	relOneActive(t, db, e.HolderID(), h.Epoch())
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('_writer_queue', 'ux_writer_leases_active', 'ix_writer_queue_order')`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("recreated queue table and indexes: %d (%v), want 3", n, err)
	}
}

// TestFencingTellsOwnRemovalFromLoss: a transaction whose check right after
// BEGIN IMMEDIATE found the lease held commits even though it deleted the
// lease row itself, and ends the grant; the check before COMMIT alone
// (Fence), or a transaction no longer open, takes the same missing row for
// a loss.
func TestFencingTellsOwnRemovalFromLoss(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = time.Hour })
	db := rawDB(t, path)
	ctx := context.Background()
	// inTx runs BEGIN IMMEDIATE, the fencing as told, the DELETE and then
	// COMMIT if the fencing allowed it.
	inTx := func(h *Hold, begin bool, open bool) (committed bool, err error) {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		err = conn.Raw(func(dc any) error {
			c := dc.(*sqlite3.SQLiteConn)
			if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE", nil); err != nil {
				return err
			}
			defer func() {
				if !c.AutoCommit() {
					c.ExecContext(ctx, "ROLLBACK", nil)
				}
			}()
			var f *Fencing
			if begin {
				var lost bool
				if f, lost, err = h.FenceBegin(ctx, c); err != nil || lost {
					t.Fatalf("FenceBegin: lost %t, %v", lost, err)
				}
			}
			if _, err := c.ExecContext(ctx, "DELETE FROM _writer_leases", nil); err != nil {
				return err
			}
			if f == nil {
				err = h.Fence(ctx, c)
			} else {
				err = f.Check(ctx, c, open)
			}
			if err != nil {
				return err
			}
			if _, err := c.ExecContext(ctx, "COMMIT", nil); err != nil {
				return err
			}
			committed = true
			if f != nil {
				f.Committed()
			}
			return nil
		})
		return committed, err
	}

	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		begin, open bool
	}{{"Fence alone", false, true}, {"transaction no longer open", true, false}} {
		if ok, err := inTx(h, c.begin, c.open); ok || !errors.Is(err, ErrLost) {
			t.Fatalf("%s: committed %t, %v; want ErrLost", c.name, ok, err)
		}
		if !h.Held() {
			// The loss was marked: take the lane again for the next case.
			h.Release()
			if h, err = e.Acquire(ctx, "s", "l", req); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := h.Epoch()
	if ok, err := inTx(h, true, true); !ok || err != nil {
		t.Fatalf("own removal: committed %t, %v; want committed", ok, err)
	}
	if h.Held() {
		t.Fatal("the grant whose row the transaction deleted is still held")
	}
	err = h.Check(ctx)
	var le *Error
	if !errors.As(err, &le) || !errors.Is(err, ErrLost) || !strings.Contains(le.Reason, "this process") {
		t.Fatalf("Check after the own removal: %v, want ErrLost naming this process's transaction", err)
	}
	h.Release()
	h, err = e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if h.Epoch() <= before {
		t.Fatalf("next epoch %d, want above %d", h.Epoch(), before)
	}
}
