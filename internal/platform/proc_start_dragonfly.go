//go:build dragonfly

package platform

// kernelStartTime is "?" for a live process: DragonFly's struct kinfo_proc
// (kp_start) is not decoded here, so a start time is never compared
// (compareStart: unknown, never the same).
func kernelStartTime(pid int64) string {
	if Exists(pid) {
		return "?"
	}
	return ""
}
