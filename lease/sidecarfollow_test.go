package lease

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// needFollowingLocks skips a test of following the liveness files where
// the engine keeps none, or keeps them in a way no removal reaches.
func needFollowingLocks(t *testing.T, e *Engine) platform.Follower {
	t.Helper()
	if !platform.KeepsLocks {
		t.Skip("this platform keeps no liveness locks")
	}
	f, ok := e.locks.(platform.Follower)
	if !ok {
		t.Fatalf("the engine's Locks (%T) do not follow their files", e.locks)
	}
	return f
}

// sidecarExists reports whether the sidecar of base is on disk.
func sidecarExists(t *testing.T, base string) bool {
	t.Helper()
	_, err := os.Stat(platform.SidecarPath(base))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// A removal the file watch reports while the process has no stake in any
// lane creates nothing: the process moves to a new sidecar at its next
// claim, before it announces its want there. (A test's temporary
// directory, removed whole after the test while a connector was left
// open, got a new sidecar from the watch's report of its first unlink:
// "directory not empty".)
func TestSidecarRemovedWhileIdleMovesAtTheNextClaim(t *testing.T) {
	e := openEngine(t, newDB(t), nil)
	needFollowingLocks(t, e)
	before := e.locks.Mark()
	removeSidecar(t, e.base)
	e.sidecarRemoved() // what the heartbeat goroutine runs on the watch's report
	if sidecarExists(t, e.base) {
		t.Fatal("an engine with no stake in any lane created a new sidecar on the report of the removal")
	}
	if !e.followDue.Load() {
		t.Fatal("the removal was not recorded for the next claim")
	}
	h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Require: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if !sidecarExists(t, e.base) {
		t.Fatal("the claim did not create the new sidecar")
	}
	after := e.locks.Mark()
	if after == before {
		t.Fatalf("the engine still marks the removed sidecar (%q)", after)
	}
	if !strings.Contains(e.holderStart(), "/"+after+"/") {
		t.Fatalf("holder_start %q does not record the new sidecar's mark %q", e.holderStart(), after)
	}
}

// A removal reported while the process holds a lane's row (a stake) is
// followed at its next lease use, not from the heartbeat goroutine that
// got the report: a directory removed whole while the database is open
// and its row lingers (a test's temporary directory) got a new sidecar
// from the report of its first unlink, and its removal failed "directory
// not empty" (issue 39). The holder's next Acquire — here on the fast
// path, the row still its own — moves it.
func TestSidecarRemovedWhileHoldingMovesAtTheNextUse(t *testing.T) {
	e := openEngine(t, newDB(t), func(o *Options) { o.Linger = time.Hour })
	needFollowingLocks(t, e)
	before := e.locks.Mark()
	h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Require: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Release() // the row lingers: a stake
	removeSidecar(t, e.base)
	e.sidecarRemoved() // what the heartbeat goroutine runs on the watch's report
	if sidecarExists(t, e.base) {
		t.Fatal("the report of the removal created a new sidecar (from the heartbeat goroutine)")
	}
	h, err = e.Acquire(context.Background(), "s", "l", AcquireOptions{Require: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if !sidecarExists(t, e.base) {
		t.Fatal("the holder's next Acquire did not move it to a new sidecar")
	}
	if e.locks.Mark() == before {
		t.Fatalf("the holder still marks the removed sidecar (%q)", before)
	}
}

// Once the database file is gone, nothing follows its liveness files: a
// directory removed whole gets no new sidecar, however the engine is
// asked to look (tick, registration, claim).
func TestSidecarNotRecreatedForARemovedDatabase(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, nil)
	needFollowingLocks(t, e)
	h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Require: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	// The database goes first: the file watch's report of the sidecar's
	// removal reaches the heartbeat goroutine while the row lingers (a
	// stake), and a follow that ran while the database was still there
	// would rightly move this process to a new sidecar.
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses to remove a database SQLite holds open (no FILE_SHARE_DELETE): see TestOpenDatabaseCannotBeReplacedOnWindows")
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	removeSidecar(t, e.base)
	e.sidecarRemoved() // the holder's row lingers: a stake
	e.followSidecar()  // a heartbeat tick or a registration
	if _, err := e.Acquire(context.Background(), "s", "m", AcquireOptions{Require: true}); !errors.Is(err, ErrFileChanged) {
		t.Fatalf("Acquire on a removed database: %v, want ErrFileChanged", err)
	}
	if sidecarExists(t, e.base) {
		t.Fatal("a sidecar was created again beside a removed database")
	}
}
