package lease

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// TestAskHoldersAnswersInParts: a holder answers "who waits?" with every
// registration it holds, over as many datagrams as they need (2,048 bytes
// each in the portable tier), and a holder without a doorbell is reported
// at once, not waited for.
func TestAskHoldersAnswersInParts(t *testing.T) {
	needDoorbell(t)
	e, _, h := holdLane(t)
	defer h.Release()
	l := e.lane("s", "l")
	const n = 60
	l.mu.Lock()
	l.inbox.pending = map[string]registration{}
	for i := range n {
		id := fmt.Sprintf("cl-waiter-%02d-%s", i, strings.Repeat("x", 40))
		l.inbox.pending[id] = registration{Scope: "s", Lane: "l", ID: id, Start: "boot/ns/1/2", PID: int64(1000 + i),
			Slot: slotFor(id), Priority: 100, Arrival: int64(i + 1), TTL: 30000, Enqueued: 1}
	}
	l.mu.Unlock()
	qs := []holderQuery{{id: e.holderID, scope: "s", lane: "l"}, {id: "cl-nobody-listens", scope: "s", lane: "x"}}
	start := time.Now()
	answers, note := askHolders(e.path, platform.FileID{Dev: e.dev, Ino: e.ino}, qs, time.Minute)
	if note != "" {
		t.Fatalf("note %q", note)
	}
	a := answers[laneKey{"s", "l"}]
	if a == nil || !a.answered || len(a.regs) != n || a.total != n {
		t.Fatalf("answer %+v: want all %d registrations", a, n)
	}
	for _, r := range a.regs {
		if r.Scope != "s" || r.Lane != "l" || r.PID < 1000 || !strings.HasPrefix(r.ID, "cl-waiter-") {
			t.Fatalf("registration %+v", r)
		}
	}
	if x := answers[laneKey{"s", "x"}]; x == nil || x.answered || !strings.Contains(x.why, "no doorbell") {
		t.Fatalf("answer of a holder nobody hears: %+v", x)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("askHolders waited for a holder that has no doorbell")
	}
}

// TestEngineStatusNamesRegisteredWaiters: a waiter that cannot write its
// queue row (another connection keeps SQLite's write lock) has only
// registered with the holder; Engine.Status names it, from the holder's
// answer, and leaves nobody unnamed.
func TestEngineStatusNamesRegisteredWaiters(t *testing.T) {
	e, path, h := holdLane(t)
	db := rawDB(t, path)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=w")
	var st []LaneStatus
	if platform.PollWake {
		eventually(t, "Status to count the waiter, unnamed, with a note", func() bool {
			st, err = e.Status(context.Background())
			return err == nil && len(st) == 1 && st[0].Waiting == 1 && st[0].Unnamed == 1 && strings.Contains(st[0].Note, "doorbell")
		})
	} else {
		eventually(t, "Status to name the registered waiter", func() bool {
			st, err = e.Status(context.Background())
			return err == nil && len(st) == 1 && len(st[0].Waiters) == 1 && st[0].Waiters[0].PID == int64(w.Cmd.Process.Pid)
		})
		if ws := st[0].Waiters[0]; ws.Source != "holder" || ws.Place != 1 || !ws.Alive || ws.Since.IsZero() || st[0].Unnamed != 0 {
			t.Fatalf("status %+v: want the waiter named by the holder, first in line", st[0])
		}
	}
	conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	h.Release()
	w.expect("granted")
}
