package main

import (
	"context"
	"database/sql"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/platform"
)

// TestInlineHolderServesWaitersInTheirOrder: on a lane nobody holds, A's
// write claims the lane inside its own transaction (lease.InlineConfirmer),
// so while A keeps that transaction open status shows no holder, and B
// (priority 100) and C (priority 10), which start waiting meanwhile, find
// the lane free and can neither register with a holder nor queue. A's
// commit keeps the row because they want it, and its hand-off waits for
// their registrations: the lane is granted in their order, C then B, not
// in the order they reach SQLite's write lock.
func TestInlineHolderServesWaitersInTheirOrder(t *testing.T) {
	inlineOrder(t, nil)
}

// inlineOrder runs TestInlineHolderServesWaitersInTheirOrder; between
// telling A to commit and A's commit, stall (when not nil) is called with
// B and C, and its result called after A committed.
func inlineOrder(t *testing.T, stall func(b, c *holder) (resume func())) {
	path := txDB(t)
	// A released row for main/jobs: its next writer finds the lane free.
	db, err := sql.Open("cleolease", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(cleolease.WithLane(context.Background(), "main", "jobs"), "INSERT INTO t (pid) VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	a := startTx(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("INTX")
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Holder != nil {
		t.Fatalf("holder %+v while A's transaction is open; want none yet (claimed inside that transaction)", l.Holder)
	}
	b := startTx(t, path, "jobs", 100)
	b.expect("OPEN")
	c := startTx(t, path, "jobs", 10)
	c.expect("OPEN")
	eventually(t, "status to count B and C waiting", func() bool {
		return laneOf(t, statusJSON(t, path), "main", "jobs").Waiting == 2
	})

	// Each commits as soon as it holds the lane; the table records the order.
	b.send("commit")
	c.send("commit")
	var resume func()
	if stall != nil {
		resume = stall(b, c)
	}
	a.send("commit")
	a.expect("COMMITTED")
	if resume != nil {
		resume()
	}
	for _, w := range []*holder{b, c} {
		w.expect("INTX")
		w.expect("COMMITTED")
	}
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query("SELECT pid FROM t WHERE pid <> 0 ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []int64
	for rows.Next() {
		var pid int64
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		order = append(order, pid)
	}
	if platform.PollWake {
		// No doorbell, no registrations: the hand-off has only the queue
		// rows the waiters write once they see A's row, and the order is
		// not asserted (as in TestStatusNamesWaitersBehindAWriteTransaction).
		return
	}
	if want := []int64{a.pid(), c.pid(), b.pid()}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("commit order %v; want A, C (priority 10), B (priority 100) = %v", order, want)
	}
}
