package lease

import "testing"

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
