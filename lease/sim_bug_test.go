package lease

import "testing"

// The simulation finds each hole its checks exist for, when an engine is
// opened with the hole put back (holes, set in the osSeams of the
// simulated processes only: no program ever has one). Each names the
// check that must report it; the seeds and steps are the budget within
// which it must. CI runs them (.ci/run, without the race detector, where
// they take a few seconds each), and so does go test ./lease.

// withHoles is cfg with h put back in every simulated engine.
func withHoles(cfg func(seed int64, steps int) simConfig, h holes) func(seed int64, steps int) simConfig {
	return func(seed int64, steps int) simConfig {
		c := cfg(seed, steps)
		c.holes = h
		return c
	}
}

// simFencing is a run of the fencing checks: three processes that stop
// and resume, the journal mode chosen by the seed.
func simFencing(seed int64, steps int) simConfig {
	journal := "WAL"
	if seed%2 == 1 {
		journal = "DELETE"
	}
	return simConfig{seed: seed, steps: steps, procs: 3, journal: journal, stops: true}
}

// TestSimulationFindsSeededBug: with a fencing check that passes without
// reading the row, a holder that was broken, or robbed after its TTL,
// commits at its old epoch; the epoch checks report it.
//
//	go test -run TestSimulationFindsSeededBug ./lease
func TestSimulationFindsSeededBug(t *testing.T) {
	simFindsBug(t, "a commit at a superseded epoch (fencing reads skipped)", withHoles(simFencing, holes{skipFence: true}), 20, 4000)
}

// TestSimulationFindsLateGrantBug: with issue 28 item 1's fix reverted
// (forgetLateGrant), a hand-off tests a waiter's want byte and writes its
// grant; the waiter's context ends before the grant commits, it quits
// without seeing it, and the grant datagram is lost; the row then names a
// live process that does not know it holds the lane, and nothing settles
// it. The unaware-holder check (sim_live_test.go) reports the row, or the
// stuck-lane check the waiters it leaves stuck.
func TestSimulationFindsLateGrantBug(t *testing.T) {
	simFindsBug(t, "a grant written for a waiter that was giving up, then forgotten",
		withHoles(simLateGrant, holes{forgetLateGrant: true}), 8, 10000, simUnaware, simStuck)
}

// TestSimulationFindsSidecarBug: with issue 28 item 2's fix reverted
// (ignoreSidecarMove), an engine never moves to a replaced sidecar, so a
// process that opens afterwards waits unseen by a holder that never
// idles: the starvation or stuck-lane check reports it.
func TestSimulationFindsSidecarBug(t *testing.T) {
	simFindsBug(t, "a waiter unseen by a holder on a replaced sidecar",
		withHoles(simSidecar, holes{ignoreSidecarMove: true}), 12, 10000, simStarved, simStuck)
}

// TestSimulationFindsPidnsBug: with issue 28 item 3's fix reverted
// (unknownIsDead), a live holder of another pid namespace, whose lock a
// probe cannot test (another sidecar generation, or a failed test), is
// reclaimed as dead; the robbery check reports it.
func TestSimulationFindsPidnsBug(t *testing.T) {
	simFindsBug(t, "a live holder of another pid namespace judged dead",
		withHoles(simPidns, holes{unknownIsDead: true}), 8, 5000, simRobbed)
}

// simReopen reaches the rows a process's engines leave behind (issue 38
// items 1 and 2): processes close and reopen their engine, often in
// place of a release, and a Close whose release cannot take SQLite's
// write lock in time (a stopped process keeps it) leaves the row; the
// file is backed up and restored in place, bringing back rows that name
// live processes whose engine does not listen. No Break or TTL steal
// frees a lane, and nobody is killed (a dead holder's lane is reclaimed).
func simReopen(seed int64, steps int) simConfig {
	return simConfig{seed: seed, steps: steps, procs: 3, journal: "WAL", stops: true, liveness: true, reopen: true, reopenEvery: 5,
		faults: simFaults{workers: true, restore: true}, closeLocked: true, steal: 2, kill: -1, noBreak: true}
}

// TestSimulationFindsLeftRowBug: with issue 38 item 2's fixes reverted
// (noLeftRowSweep: an engine reopened with TablesReady does not sweep the
// row its process's last engine left; ignoreRefusal: a waiter does not
// take a refused registration for a row the live holder does not hold),
// the row names a live process that does not listen: the stuck-lane or
// unaware-holder check reports it.
func TestSimulationFindsLeftRowBug(t *testing.T) {
	cfg := func(seed int64, steps int) simConfig {
		c := simReopen(seed, steps)
		c.reopenReads = true
		return c
	}
	simFindsBug(t, "a row naming a live process whose engine does not listen",
		withHoles(cfg, holes{noLeftRowSweep: true, ignoreRefusal: true}), 24, 10000, simStuck, simStarved)
}

// TestSimulationBugConfigurationsRunClean: each configuration that
// reaches a seeded hole runs without a violation when the hole is not put
// back — the fixed code survives what finds the hole.
func TestSimulationBugConfigurationsRunClean(t *testing.T) {
	reads := func(seed int64, steps int) simConfig {
		c := simReopen(seed, steps)
		c.reopenReads = true
		return c
	}
	for name, cfg := range map[string]func(int64, int) simConfig{
		"fencing": simFencing, "lategrant": simLateGrant, "sidecar": simSidecar, "pidns": simPidns, "reopen": reads,
	} {
		t.Run(name, func(t *testing.T) {
			for seed := range int64(2) {
				res := runSim(t, cfg(seed, 5000))
				for _, v := range res.violations {
					t.Errorf("seed %d: %s", seed, v)
				}
				if res.commits == 0 {
					t.Errorf("seed %d: no write committed", seed)
				}
			}
		})
	}
}
