//go:build unix

package workload

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestRunShortCountsEachProcess: a process that exits 0 is a commit with
// its latency, one that fails is an error classified by its output's last
// line (SQLite's "database is locked" is a lock error), and a process that
// cannot start ends the run with its error.
func TestRunShortCountsEachProcess(t *testing.T) {
	n := 0
	results, wall, err := RunShort(context.Background(), 1, time.Hour, func(int) *exec.Cmd {
		n++
		switch n {
		case 1:
			return exec.Command("sh", "-c", "exit 0")
		case 2:
			return exec.Command("sh", "-c", "echo opening; echo 'worker: database is locked' >&2; exit 1")
		}
		return exec.Command("/nonexistent/worker")
	}, nil)
	if err == nil {
		t.Fatal("a process that cannot start did not end the run with an error")
	}
	if len(results) != 1 || wall <= 0 {
		t.Fatalf("results %+v, wall %v", results, wall)
	}
	r := results[0]
	if r.Commits != 1 || len(r.Latencies) != 1 || r.Errors["locked"] != 1 || r.Samples["locked"] != "worker: database is locked" {
		t.Fatalf("one success and one lock error: got %+v", r)
	}
	if _, ok := r.Extra["cpu_us"]; !ok {
		t.Error("no CPU time recorded")
	}
}
