//go:build cleolease_simbug_pidns

package lease

// seededBugUnknownIsDead, under the build tag cleolease_simbug_pidns only,
// brings back the hole issue 28 item 3 closed: a holder of another pid
// namespace whose liveness lock cannot be tested is judged dead, so a
// live one is robbed. The simulation must find it
// (sim_bug_pidns_test.go). Never set in a real build.
const seededBugUnknownIsDead = true
