//go:build unix

package main

// CLI tests that stop a process with SIGSTOP.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// TestBreakNeverHitsALaterHolder: break prints the holder and epoch it
// saw, and breaks only that epoch. Here it sees A, then waits for SQLite's
// write lock (stopped, to keep the order fixed) while A releases and B
// takes the lane; when it goes on it must leave B alone and say so. Before,
// it broke B (issue 16, item 7).
func TestBreakNeverHitsALaterHolder(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	a := startHolder(t, path, "jobs", 100)
	a.expect("OPEN")
	epochA, _ := strconv.ParseInt(a.expect("HELD"), 10, 64)
	unlock := takeWriteLock(t, path)

	cmd, sc, errb := startCLI(t, "break", path, "--scope", "main", "--lane", "jobs", "--force", "--timeout", "2m")
	if !sc.Scan() || !strings.Contains(sc.Text(), fmt.Sprintf("pid %d at epoch %d", a.pid(), epochA)) {
		t.Fatalf("break's first line %q, want holder pid %d at epoch %d; stderr: %s", sc.Text(), a.pid(), epochA, errb.String())
	}
	// break now waits for the write lock; keep it from running while the
	// lane changes hands.
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// kill returns before the process has stopped: wait for it, so that it
	// cannot take the write lock released below.
	eventually(t, "break to be stopped", func() bool { return processState(t, cmd.Process.Pid) == 'T' })
	unlock()
	b := startHolder(t, path, "jobs", 100)
	b.expect("OPEN")
	a.send("release")
	a.expect("RELEASED")
	epochB, _ := strconv.ParseInt(b.expect("HELD"), 10, 64)
	if epochB <= epochA {
		t.Fatalf("B's epoch %d, want > %d", epochB, epochA)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("break: %v; stdout %q; stderr %s", err, rest, errb.String())
	}
	// The lines after the holder seen: its evidence, then the outcome
	// (wrapped at spaces: compared with one space between words).
	last := strings.Join(strings.Fields(strings.Join(rest, " ")), " ")
	if len(rest) < 2 || !strings.HasPrefix(rest[0], "  alive") || !strings.Contains(last, "nothing broken") || strings.Contains(last, "broke ") ||
		!strings.Contains(last, fmt.Sprintf("(pid %d) took the lane since, at epoch %d", b.pid(), epochB)) {
		t.Errorf("break's last line %q, want nothing broken, naming B (pid %d) at epoch %d", rest, b.pid(), epochB)
	}
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Holder == nil || l.Holder.PID != b.pid() || l.Holder.Epoch != epochB {
		t.Fatalf("after break, holder %+v, want B (pid %d) at epoch %d", l.Holder, b.pid(), epochB)
	}
}

// processState is the state letter of process pid in /proc/pid/stat ('R',
// 'S', 'T' for stopped, ...).
func processState(t *testing.T, pid int) byte {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return b[i+2]
}
