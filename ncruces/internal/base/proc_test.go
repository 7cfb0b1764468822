package base_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

// perWorker is how many increments each worker process makes.
const perWorker = 200

// worker starts cmd as a basetest worker named who on the file path, with
// the exclusivity marker marker, and waits for its "ready" (its lease
// engine open).
func worker(t *testing.T, cmd *exec.Cmd, who, path, marker string) *proctest.Child {
	t.Helper()
	cmd.Env = append(cmd.Env, basetest.EnvDB+"="+path, basetest.EnvN+"="+strconv.Itoa(perWorker),
		basetest.EnvWho+"="+who, basetest.EnvMarker+"="+marker, proctest.GoraceNoExitSleep())
	c := proctest.StartCmd(t, cmd)
	c.Expect("ready")
	return c
}

// ncrucesWorker is this test binary as a worker over this base.
func ncrucesWorker(t *testing.T, who, path, marker string) *proctest.Child {
	t.Helper()
	return worker(t, proctest.Command(roleEnv+"=count"), who, path, marker)
}

// mattnWorker is a worker over the go-sqlite3 base (the root module's
// internal/basetest/mattnworker, built with cgo).
func mattnWorker(t *testing.T, who, path, marker string) *proctest.Child {
	t.Helper()
	cmd := exec.Command(basetest.MattnWorker(t))
	cmd.Env = os.Environ()
	cmd.Stderr = os.Stderr
	return worker(t, cmd, who, path, marker)
}

// race starts the workers' counting at once, waits for each to finish,
// and checks the file: every increment counted once, in grants that never
// overlapped (basetest.Verify), each worker's perWorker increments logged
// under its own name.
func race(t *testing.T, path string, workers map[string]*proctest.Child) {
	t.Helper()
	for _, c := range workers {
		c.Send("go")
	}
	for _, c := range workers {
		c.Expect("done")
		if err := c.Cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", c.Cmd.Process.Pid, err)
		}
	}
	ctx := context.Background()
	db := openDB(t, dsnOf(path))
	epochs, err := basetest.Verify(ctx, db, len(workers)*perWorker)
	if err != nil {
		t.Fatal(err)
	}
	for who := range workers {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM log WHERE who = ?", who).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != perWorker {
			t.Fatalf("%s logged %d increments, want %d", who, n, perWorker)
		}
	}
	t.Logf("%d increments under %d grants", len(workers)*perWorker, epochs)
}

// Two processes, each running the lease engine over ncruces, contend for
// one lane with fenced read-modify-write increments: none is lost and no
// grant overlaps another.
func TestTwoNcrucesProcessesCountExactly(t *testing.T) {
	skipDotlk(t)
	path := newDB(t)
	marker := filepath.Join(filepath.Dir(path), "held")
	race(t, path, map[string]*proctest.Child{
		"ncruces-a": ncrucesWorker(t, "ncruces-a", path, marker),
		"ncruces-b": ncrucesWorker(t, "ncruces-b", path, marker),
	})
}

// skipDotlk skips t in a build with the tag sqlite3_dotlk, whose WAL
// index is shared within one process only (ncruces's vfs/shm_dotlk.go: the
// first process keeps a dot-file lock on it, and every other process's
// WAL access is SQLITE_BUSY until it closes): processes cannot share a WAL
// file.
func skipDotlk(t *testing.T) {
	t.Helper()
	if base.For(nil).Locking() == sqlbase.LockingDotlk {
		t.Skip("sqlite3_dotlk: ncruces shares a WAL index within one process only")
	}
}

// An ncruces process (OFD locks on Linux and macOS) and a go-sqlite3
// process (C SQLite, cgo: POSIX record locks, which OFD locks see) take
// the same lane of one file: one lease, no lost update, no overlapping
// grant.
func TestNcrucesAndGoSQLite3ProcessesShareTheLease(t *testing.T) {
	if own := base.For(nil).Locking(); !own.Coexists(sqlbase.LockingPOSIX) {
		t.Skipf("this build locks with %s, which go-sqlite3's POSIX locks do not see (lease.Open refuses the pair: TestFlockBuildRefusedBesideGoSQLite3AndOFD)", own)
	}
	path := newDB(t)
	marker := filepath.Join(filepath.Dir(path), "held")
	race(t, path, map[string]*proctest.Child{
		"ncruces":    ncrucesWorker(t, "ncruces", path, marker),
		"go-sqlite3": mattnWorker(t, "go-sqlite3", path, marker),
	})
}

// flockBinary builds this package's tests with the tag sqlite3_flock (so
// that ncruces's VFS, and Locking, use flock) into a directory of t's,
// and returns its path.
func flockBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(testdir.New(t), "flock.test")
	cmd := exec.Command("go", "test", "-c", "-tags", basetest.Tags("sqlite3_flock"), "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the flock worker: %v\n%s", err, out)
	}
	return bin
}

// startFlock starts the flock build in the role "locking" on path and
// checks the kind it reports.
func startFlock(t *testing.T, bin, path string) *proctest.Child {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=locking", basetest.EnvDB+"="+path, proctest.GoraceNoExitSleep())
	cmd.Stderr = os.Stderr
	c := proctest.StartCmd(t, cmd)
	if kind := c.Expect("kind"); kind != string(sqlbase.LockingFlock) {
		t.Fatalf("the sqlite3_flock build reports kind %q", kind)
	}
	return c
}

// wantNames checks that a refusal's reason names this process's kind
// (own, of an ncruces process), the other's, and the remedy.
func wantNames(t *testing.T, reason string, own, other sqlbase.Locking) {
	t.Helper()
	for _, s := range []string{"this process (ncruces) locks with " + own.Describe(), "another process of this file locks with " + other.Describe(), "compatible locking"} {
		if !strings.Contains(reason, s) {
			t.Fatalf("reason %q does not say %q", reason, s)
		}
	}
}

// (Named ...GoSQLite3...: it builds the go-sqlite3 worker, so CI's step
// without a C compiler leaves it out.) ncruces built with sqlite3_flock
// locks with flock(2), which on Linux
// and macOS neither go-sqlite3's POSIX record locks nor ncruces's default
// OFD locks see: such a process is refused at lease.Open beside a live
// process of either kind (lease.ErrLockingConflict, naming both kinds),
// and a default ncruces process is refused beside a live flock one. Once
// the flock process is gone, the default one opens.
func TestFlockBuildRefusedBesideGoSQLite3AndOFD(t *testing.T) {
	if !platform.KeepsLocks {
		t.Skip("this platform keeps no liveness files to announce a kind on")
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("ncruces's default locks on %s are not OFD locks", runtime.GOOS)
	}
	if base.For(nil).Locking() != sqlbase.LockingOFD {
		t.Skipf("this build locks with %s", base.For(nil).Locking())
	}
	bin := flockBinary(t)
	ctx := context.Background()
	open := func(path string) (*lease.Engine, error) {
		return lease.Open(ctx, lease.Options{Base: base.For(nil), Path: path, DSN: dsnOf(path), TTL: time.Hour})
	}

	t.Run("beside an ofd process", func(t *testing.T) {
		path := newDB(t)
		e, err := open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		flock := startFlock(t, bin, path)
		wantNames(t, flock.Expect("refused"), sqlbase.LockingFlock, sqlbase.LockingOFD)
		if err := flock.Cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("beside a posix process", func(t *testing.T) {
		path := newDB(t)
		mattn := mattnWorker(t, "go-sqlite3", path, filepath.Join(filepath.Dir(path), "held"))
		flock := startFlock(t, bin, path)
		wantNames(t, flock.Expect("refused"), sqlbase.LockingFlock, sqlbase.LockingPOSIX)
		if err := flock.Cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		mattn.Cmd.Process.Kill()
		mattn.Cmd.Wait()
	})

	t.Run("an ofd process beside a flock one", func(t *testing.T) {
		path := newDB(t)
		flock := startFlock(t, bin, path)
		flock.Expect("open")
		_, err := open(path)
		var le *lease.Error
		if !errors.Is(err, lease.ErrLockingConflict) || !errors.As(err, &le) || le.Op != "open" || le.Path == "" {
			t.Fatalf("lease.Open beside a flock process: %v; want a *lease.Error of the open wrapping ErrLockingConflict", err)
		}
		wantNames(t, le.Reason, sqlbase.LockingOFD, sqlbase.LockingFlock)
		// Gone, the flock process's kind goes with it.
		flock.Cmd.Process.Kill()
		flock.Cmd.Wait()
		e, err := open(path)
		if err != nil {
			t.Fatalf("lease.Open after the flock process died: %v", err)
		}
		e.Close()
	})
}
