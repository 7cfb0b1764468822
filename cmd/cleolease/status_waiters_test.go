package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
)

// roleTx opens CLEOLEASE_DSN, says "OPEN", begins a write transaction on
// (main, HOLD_LANE) with priority HOLD_PRIORITY — waiting for the lease
// like any writer — inserts a row, says "INTX", and keeps the transaction
// (and so SQLite's write lock) open until told "commit" on stdin; then it
// says "COMMITTED" and exits when stdin closes.
func roleTx() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	ctx := cleolease.WithLane(context.Background(), "main", os.Getenv("HOLD_LANE"))
	n, _ := strconv.Atoi(os.Getenv("HOLD_PRIORITY"))
	ctx = cleolease.WithPriority(ctx, n)
	if err := db.PingContext(ctx); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("OPEN")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t (pid) VALUES (?)", os.Getpid()); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("INTX")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "commit" {
			if err := tx.Commit(); err != nil {
				fmt.Println("ERR", err)
				return 1
			}
			fmt.Println("COMMITTED")
		}
	}
	return 0
}

// txDB creates a database with roleTx's table t, and returns its path.
func txDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(testdir.New(t), "app.db")
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("CREATE TABLE t (pid INTEGER)"); err != nil {
		t.Fatal(err)
	}
	return path
}

// startTx starts a child process playing roleTx on path's lane with the
// given priority; it is killed at the end of the test.
func startTx(t *testing.T, path, lane string, priority int) *holder {
	t.Helper()
	return &holder{proctest.Start(t, proctest.GoraceNoExitSleep(), "CLEOLEASE_CMD_TEST=tx",
		"CLEOLEASE_DSN=file:"+path+"?_lease_wait=10m&_lease_mode=require",
		"HOLD_LANE="+lane, "HOLD_PRIORITY="+strconv.Itoa(priority))}
}

// TestStatusNamesWaitersBehindAWriteTransaction (issue 16, item 5): A is
// inside a write transaction, so it keeps SQLite's write lock; B and C wait
// in BeginTx on the same lane and cannot write their queue rows. status
// names both — pid, priority, waiting since, place in line — while A keeps
// the lock, and the lane is then granted in the order shown.
func TestStatusNamesWaitersBehindAWriteTransaction(t *testing.T) {
	path := txDB(t)

	a := startTx(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("INTX")
	b := startTx(t, path, "jobs", 100)
	b.expect("OPEN")
	c := startTx(t, path, "jobs", 10)
	c.expect("OPEN")

	var l lease.LaneStatus
	if platform.PollWake {
		// No doorbell: the waiters are counted, not named, and the note
		// says why.
		eventually(t, "status to count B and C", func() bool {
			l = laneOf(t, statusJSON(t, path), "main", "jobs")
			return l.Waiting == 2
		})
		if l.Unnamed != 2 || !strings.Contains(l.Note, "doorbell") {
			t.Fatalf("lane %+v: want two unnamed waiters and a note about the doorbell", l)
		}
		// Nobody registered, so the holder has no order to follow: the
		// waiters race for the lane when A commits (neither could write
		// its queue row), and the grant order is not asserted.
		a.send("commit")
		a.expect("COMMITTED")
		return
	} else {
		eventually(t, "status to name B and C while A keeps the write lock", func() bool {
			l = laneOf(t, statusJSON(t, path), "main", "jobs")
			return len(l.Waiters) == 2 && l.Waiters[0].PID == c.pid() && l.Waiters[1].PID == b.pid()
		})
		if l.Holder == nil || l.Holder.PID != a.pid() || !l.Holder.Alive {
			t.Fatalf("holder %+v: want A (pid %d), alive", l.Holder, a.pid())
		}
		for i, want := range []struct{ prio int64 }{{10}, {100}} {
			w := l.Waiters[i]
			if w.Priority != want.prio || w.Place != i+1 || w.Since.IsZero() || w.Since.After(l.Waiters[i].Since.Add(w.Waited)) ||
				!w.Alive || w.Source != "holder" || w.ID == "" {
				t.Errorf("waiter %d = %+v: want priority %d, place %d, a start time, alive, named by the holder", i, w, want.prio, i+1)
			}
		}
		if l.Unnamed != 0 || l.Waiting != 2 {
			t.Errorf("lane %+v: want 2 waiting, none unnamed", l)
		}
		// The text form asks the holder again; a loaded machine (Wine in
		// CI) can make one answer miss holderAnswerWait, and then the
		// waiters are counted, not named, so the listing is awaited.
		var r result
		eventually(t, "cleolease status to list C then B", func() bool {
			r = cli(t, "status", path)
			ic, ib := pidAt(r.stdout, c.pid()), pidAt(r.stdout, b.pid())
			return r.code == 0 && ic >= 0 && ib > ic
		})
		t.Logf("cleolease status:\n%s", r.stdout)
	}

	// The grant follows the order shown: C (priority 10), then B.
	a.send("commit")
	a.expect("COMMITTED")
	c.expect("INTX")
	c.send("commit")
	c.expect("COMMITTED")
	b.expect("INTX")
	b.send("commit")
	b.expect("COMMITTED")
}

// TestBreakRefusesAtOnce (issue 21, item 4): break without --force on a
// live holder inside a write transaction refuses at once, naming it,
// instead of waiting for SQLite's write lock, which the holder keeps: with
// an hour's --timeout it returns while the holder is still in its
// transaction (told to commit only afterwards), and the lane is untouched.
func TestBreakRefusesAtOnce(t *testing.T) {
	path := txDB(t)
	a := startTx(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("INTX")
	r := cli(t, "break", path, "--scope", "main", "--lane", "jobs", "--timeout", "1h")
	pid := strconv.FormatInt(a.pid(), 10)
	if r.code != 1 || !strings.Contains(r.stderr, "refusing to break main/jobs: holder cl-") ||
		!strings.Contains(r.stderr, "(pid "+pid+") is alive (liveness lock held)") {
		t.Fatalf("break of a live holder inside a write transaction: want an immediate refusal naming pid %s, got %s", pid, r)
	}
	oneStderrLine(t, result{stderr: r.stderr})
	// Checked while A still holds: after its commit the row lingers only
	// briefly (under Wine the status process started after it was gone).
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Holder == nil || l.Holder.PID != a.pid() {
		t.Fatalf("the refused break changed the holder: %+v", l.Holder)
	}
	a.send("commit")
	a.expect("COMMITTED")
}
