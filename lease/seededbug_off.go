//go:build !cleolease_simbug

package lease

// seededBugSkipFence is false in every real build. The build tag
// cleolease_simbug sets it (seededbug_on.go), so that the simulation's
// test can show that the simulation catches a fencing check that passes
// without reading the row (sim_bug_test.go).
const seededBugSkipFence = false
