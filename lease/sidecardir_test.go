package lease

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

// With a sidecar directory (Options.SidecarDir), Engine.Status asks the
// lane's holder at the doorbell it listens on there: a waiter that has
// only registered with the holder (SQLite's write lock is taken) is named.
// Before the fix, the portable tier asked beside the database, where no
// holder listens, and left the waiter unnamed.
func TestStatusAsksHoldersInSidecarDir(t *testing.T) {
	needDoorbell(t)
	dir := testdir.New(t)
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0; o.SidecarDir = dir })
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=w", "CLEOLEASE_SIDECAR_DIR="+dir)
	var st []LaneStatus
	eventually(t, "Status to name the registered waiter", func() bool {
		st, err = e.Status(context.Background())
		return err == nil && len(st) == 1 && len(st[0].Waiters) == 1 && st[0].Waiters[0].PID == int64(w.Cmd.Process.Pid)
	})
	if st[0].Waiters[0].Source != "holder" || st[0].Unnamed != 0 {
		t.Fatalf("status %+v: want the registered waiter named by the holder (note %q)", st[0], st[0].Note)
	}
	conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	h.Release()
	w.expect("granted")
}

// Inspect looks for the liveness locks' files in the sidecar directory it
// is given: a live holder is judged by its lock there, and once killed by
// that lock's release, not by its pid.
func TestInspectFindsLocksInSidecarDir(t *testing.T) {
	if !platform.KeepsLocks {
		t.Skip("this platform keeps no liveness locks")
	}
	dir := testdir.New(t)
	path := newDB(t)
	holder := startChild(t, "hold", path, "CLEOLEASE_SIDECAR_DIR="+dir)
	holder.expect("held")
	for _, p := range []string{platform.SidecarPath(path), path + "-cleolease.d"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists beside the database: the holder ignored its sidecar directory", p)
		}
	}
	lanes, err := Inspect(context.Background(), testBase, path, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 1 || lanes[0].Holder == nil || !lanes[0].Holder.Alive || lanes[0].Holder.Why != "liveness lock held" {
		t.Fatalf("lanes %+v: want the holder alive by its liveness lock", lanes)
	}
	holder.Cmd.Process.Kill()
	holder.Cmd.Wait()
	lanes, err = Inspect(context.Background(), testBase, path, dir, nil)
	if err != nil || lanes[0].Holder == nil || lanes[0].Holder.Alive || !strings.Contains(lanes[0].Holder.Why, "liveness lock released") {
		t.Fatalf("after SIGKILL: %+v, %v; want the holder dead by its released lock", lanes, err)
	}
}
