package base_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/proctest"
)

// perWorker is how many increments each worker process makes.
const perWorker = 200

// worker starts cmd as a basetest worker named who on the file path, with
// the exclusivity marker marker, and waits for its "ready".
func worker(t *testing.T, cmd *exec.Cmd, who, path, marker string) *proctest.Child {
	t.Helper()
	cmd.Env = append(cmd.Env, basetest.EnvDB+"="+path, basetest.EnvN+"="+strconv.Itoa(perWorker),
		basetest.EnvWho+"="+who, basetest.EnvMarker+"="+marker, proctest.GoraceNoExitSleep())
	c := proctest.StartCmd(t, cmd)
	c.Expect("ready")
	return c
}

// moderncWorker is this test binary as a worker over this base.
func moderncWorker(t *testing.T, who, path, marker string) *proctest.Child {
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

// Two processes, each running the lease engine over modernc, contend for
// one lane with fenced read-modify-write increments: none is lost and no
// grant overlaps another.
func TestTwoModerncProcessesCountExactly(t *testing.T) {
	path := newDB(t)
	marker := filepath.Join(filepath.Dir(path), "held")
	race(t, path, map[string]*proctest.Child{
		"modernc-a": moderncWorker(t, "modernc-a", path, marker),
		"modernc-b": moderncWorker(t, "modernc-b", path, marker),
	})
}

// A modernc process and a go-sqlite3 process (C SQLite, cgo) take the same
// lane of one file: one lease, no lost update, no overlapping grant.
func TestModerncAndGoSQLite3ProcessesShareTheLease(t *testing.T) {
	path := newDB(t)
	marker := filepath.Join(filepath.Dir(path), "held")
	race(t, path, map[string]*proctest.Child{
		"modernc":    moderncWorker(t, "modernc", path, marker),
		"go-sqlite3": mattnWorker(t, "go-sqlite3", path, marker),
	})
}
