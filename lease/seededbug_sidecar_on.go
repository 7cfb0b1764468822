//go:build cleolease_simbug_sidecar

package lease

// seededBugIgnoreSidecarMove, under the build tag cleolease_simbug_sidecar
// only, makes every engine stay on the liveness files it opened when they
// are removed or replaced, as before issue 28 item 2 (c2e842a): it never
// moves to the new sidecar, so a process that opens afterwards waits
// unseen by a holder that never idles for its Linger. The bug the
// simulation must find (a waiter starved). Never set in a real build.
const seededBugIgnoreSidecarMove = true
