//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// TestStatusStoppedHolder: a holder stopped (SIGSTOP) inside its write
// transaction cannot answer who waits; status still counts the waiter,
// from its want lock, says why it is not named, and returns (the question
// is bounded). Once the holder runs again, the waiter is named.
func TestStatusStoppedHolder(t *testing.T) {
	if platform.PollWake {
		t.Skip("no doorbell in this build: nobody is asked (see TestStatusNamesWaitersBehindAWriteTransaction)")
	}
	path := txDB(t)
	a := startTx(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("INTX")
	b := startTx(t, path, "jobs", 100)
	b.expect("OPEN")
	eventually(t, "status to name B", func() bool {
		l := laneOf(t, statusJSON(t, path), "main", "jobs")
		return len(l.Waiters) == 1 && l.Waiters[0].PID == b.pid()
	})

	if err := a.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { a.Cmd.Process.Signal(syscall.SIGCONT) }
	defer cont()
	l := laneOf(t, statusJSON(t, path), "main", "jobs")
	if l.Holder == nil || l.Holder.PID != a.pid() || !l.Holder.Alive {
		t.Fatalf("holder %+v: want A (pid %d), alive though stopped", l.Holder, a.pid())
	}
	if len(l.Waiters) != 0 || l.Waiting != 1 || l.Unnamed != 1 || !strings.Contains(l.Note, "did not answer") {
		t.Fatalf("lane %+v: want B counted, unnamed, and a note that the holder did not answer", l)
	}
	r := cli(t, "status", path)
	if r.code != 0 || !strings.Contains(flat(r.stdout), "waiting 1 process, 1 of them not named") || !strings.Contains(flat(r.stdout), "did not answer") {
		t.Errorf("status does not show the unnamed waiter and why:\n%s", r)
	}

	cont()
	eventually(t, "status to name B again once A runs", func() bool {
		l := laneOf(t, statusJSON(t, path), "main", "jobs")
		return len(l.Waiters) == 1 && l.Waiters[0].PID == b.pid()
	})
	a.send("commit")
	a.expect("COMMITTED")
	b.expect("INTX")
}

// TestInlineHolderWaitsForAStalledWaiter: as
// TestInlineHolderServesWaitersInTheirOrder, with C (priority 10) stopped
// across A's commit for 40 ms, as a loaded machine may deschedule it: A's
// hand-off waits until C, which announced its wait, has queued or
// registered (lease's gather, bounded at 100 ms), so C is still served
// before B.
func TestInlineHolderWaitsForAStalledWaiter(t *testing.T) {
	inlineOrder(t, func(b, c *holder) func() {
		if err := syscall.Kill(int(c.pid()), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		return func() {
			time.Sleep(40 * time.Millisecond) // (the stall itself, not a synchronisation)
			syscall.Kill(int(c.pid()), syscall.SIGCONT)
		}
	})
}
