package lease

import (
	"context"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
)

// A look that finds the lane's epoch moved on under the same holder — it
// released the lane and took it again — is not a hand-off carrying this
// waiter's registration (the holder may never have had it: a lost
// datagram), so it does not put the waiter's queue row off; a move to
// another holder is. Taking the first for progress let a waiter whose
// registrations were lost wait unknown to every hand-off for as long as
// the holder kept retaking the lane, until its wait bound (issue 28,
// found by the simulation's starvation check).
func TestProgressedOnlyByAHandOffToAnotherHolder(t *testing.T) {
	c := &claimRun{}
	steps := []struct {
		holder string
		epoch  int64
		want   bool
	}{
		{"cl-a", 10, false}, // the first look: nothing to compare
		{"cl-a", 10, false}, // nothing moved
		{"cl-a", 11, false}, // released and retaken by the same holder
		{"cl-b", 12, true},  // handed on to another holder
		{"cl-b", 12, false},
		{"cl-a", 13, true},
	}
	for i, s := range steps {
		if got := c.progressed(&row{h: holder{ID: s.holder}, epoch: s.epoch}); got != s.want {
			t.Fatalf("look %d (%s at epoch %d): progressed %v, want %v", i, s.holder, s.epoch, got, s.want)
		}
	}
}

// A queued waiter whose liveness this process cannot tell (injected: the
// OS hides its pid, and its row names no liveness slot to test) is not
// taken for dead: the hand-off's order keeps it, and its queue row, where
// it used to skip it and delete the row — a live waiter in another pid
// namespace, say, was then left out of every hand-off. A provably dead
// one is still skipped.
func TestQueuedWaiterOfUnknownLivenessIsKept(t *testing.T) {
	o := newFakeOS()
	e := o.open(t, newDB(t), "cl-holder", 0, nil)
	l := e.lane("s", "l")
	start := bootID() + "/" + pidNamespace() + "/100//1001"
	for _, c := range []struct {
		os   platform.ProcState
		kept bool
	}{{platform.ProcUnknown, true}, {platform.ProcAlive, true}, {platform.ProcDead, false}} {
		injectLookup(t, c.os, "100")
		w := queued{ticket: 1, row: true, h: holder{ID: "cl-waiter", PID: 4242, Start: start}}
		hd, gone, err := l.first(context.Background(), nil, []queued{w})
		if err != nil {
			t.Fatal(err)
		}
		if kept := hd != nil && hd.h.ID == "cl-waiter"; kept != c.kept || kept == (len(gone) == 1) {
			t.Fatalf("OS says %v: head %v, gone %v; want kept %v", c.os, hd, gone, c.kept)
		}
	}
}
