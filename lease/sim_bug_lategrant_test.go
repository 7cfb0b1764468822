//go:build cleolease_simbug_lategrant

package lease

import "testing"

// TestSimulationFindsLateGrantBug builds the engine with the fix of issue
// 28 item 1 reverted (the build tag cleolease_simbug_lategrant:
// seededBugForgetLateGrant) and asserts that the simulation finds the
// hole: a hand-off tests a waiter's want byte and writes its grant; the
// waiter's context ends before the grant commits, it quits without seeing
// it, and the grant datagram is lost; the row then names a live process
// that does not know it holds the lane, and nothing settles it. The
// unaware-holder check (sim_live_test.go) reports the row, or the
// stuck-lane check the waiters it leaves stuck.
//
//	go test -tags cleolease_simbug_lategrant -run TestSimulationFindsLateGrantBug ./lease
func TestSimulationFindsLateGrantBug(t *testing.T) {
	if !seededBugForgetLateGrant {
		t.Fatal("built without the seeded revert")
	}
	simFindsBug(t, "a grant written for a waiter that was giving up, then forgotten", simLateGrant, 8, 10000, simUnaware, simStuck)
}
