//go:build !cleolease_simbug_sidecar

package lease

// seededBugIgnoreSidecarMove is false in every real build. The build tag
// cleolease_simbug_sidecar sets it (seededbug_sidecar_on.go), so that the
// simulation can show that it finds the starvation of a waiter that
// opened after the sidecar was removed, when engines never follow their
// liveness files (sidecarfollow.go).
const seededBugIgnoreSidecarMove = false
