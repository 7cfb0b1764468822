//go:build !cleolease_simbug_pidns

package lease

// seededBugUnknownIsDead is false in every real build: a holder of
// another pid namespace whose liveness lock cannot be tested is unknown,
// never dead (probeHolder). The build tag cleolease_simbug_pidns sets it
// (seededbug_pidns_on.go), so that the simulation can show that it finds
// a live holder robbed.
const seededBugUnknownIsDead = false
