//go:build cleolease_simbug_sidecar

package lease

import "testing"

// TestSimulationFindsSidecarBug builds the engine with the fix of issue 28
// item 2 reverted (the build tag cleolease_simbug_sidecar:
// seededBugIgnoreSidecarMove: an engine never moves to a replaced
// sidecar) and asserts that the simulation finds the hole: a process
// restarted after the sidecar was replaced announces its want and locks
// its lifetime lock in the new generation, which a holder that stayed on
// the old one never tests; a holder that never idles for its Linger then
// never hands off, and the starvation check (sim_live_test.go) reports
// the waiter.
//
//	go test -tags cleolease_simbug_sidecar -run TestSimulationFindsSidecarBug ./lease
func TestSimulationFindsSidecarBug(t *testing.T) {
	if !seededBugIgnoreSidecarMove {
		t.Fatal("built without the seeded revert")
	}
	simFindsBug(t, "a waiter unseen by a holder on a replaced sidecar", simSidecar, 12, 10000, simStarved, simStuck)
}
