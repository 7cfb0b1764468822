//go:build !cleolease_simbug_lategrant

package lease

// seededBugForgetLateGrant is false in every real build. The build tag
// cleolease_simbug_lategrant sets it (seededbug_lategrant_on.go), so that
// the simulation's test can show that the simulation catches a grant
// written for a waiter that was giving up and then forgotten (no settle
// after a claim that quit: settle.go).
const seededBugForgetLateGrant = false
