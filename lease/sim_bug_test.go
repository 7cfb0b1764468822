//go:build cleolease_simbug

package lease

import (
	"fmt"
	"testing"
)

// TestSimulationFindsSeededBug builds the engine with a fencing check that
// passes without reading the row (the build tag cleolease_simbug:
// seededbug_on.go) and asserts that the simulation reports a violation: a
// holder that was broken, or robbed after its TTL, commits at its old
// epoch.
//
//	go test -tags cleolease_simbug -run TestSimulationFindsSeededBug ./lease
func TestSimulationFindsSeededBug(t *testing.T) {
	for seed := range int64(10) {
		for _, journal := range []string{"WAL", "DELETE"} {
			res := runSim(t, simConfig{seed: seed, steps: 4000, procs: 3, journal: journal, stops: true})
			if len(res.violations) > 0 {
				t.Logf("seed %d (%s): %d violations in %d steps; first: %s", seed, journal, len(res.violations), 4000, res.violations[0])
				return
			}
			t.Logf("seed %d (%s): no violation in 4000 steps (%d commits)", seed, journal, res.commits)
		}
	}
	t.Fatal(fmt.Sprintf("the simulation missed the seeded bug (fencing reads skipped) in 10 seeds of 4000 steps"))
}
