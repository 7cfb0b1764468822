//go:build cleolease_simbug_pidns

package lease

import "testing"

// TestSimulationFindsPidnsBug builds the engine with the fix of issue 28
// item 3 reverted (the build tag cleolease_simbug_pidns:
// seededBugUnknownIsDead: a holder of another pid namespace whose lock
// cannot be tested is judged dead) and asserts that the simulation finds
// the hole: a live holder of another pid namespace, whose lock a probe
// cannot test (another sidecar generation, or a failed test), is
// reclaimed as dead; the robbery check (sim_live_test.go) reports it.
//
//	go test -tags cleolease_simbug_pidns -run TestSimulationFindsPidnsBug ./lease
func TestSimulationFindsPidnsBug(t *testing.T) {
	if !seededBugUnknownIsDead {
		t.Fatal("built without the seeded revert")
	}
	simFindsBug(t, "a live holder of another pid namespace judged dead", simPidns, 8, 5000, simRobbed)
}
