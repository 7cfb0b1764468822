//go:build cleolease_simbug_lategrant

package lease

// seededBugForgetLateGrant, under the build tag cleolease_simbug_lategrant
// only, puts back the hole of issue 28 item 1: a claim that quit without
// finding its grant starts no settle (settle.go), and a grant datagram
// that reached it before it ended is forgotten with it, so a grant
// committed just after its waiter gave up leaves the lane with a live
// process that does not know it holds it. The simulation must find it.
// Never set in a real build.
const seededBugForgetLateGrant = true
