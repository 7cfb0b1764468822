//go:build dragonfly

package platform

import "golang.org/x/sys/unix"

// kernelStartTime reads pid's start time from sysctl kern.proc.pid.<pid>
// (one struct kinfo_proc: dragonflyKinfo).
func kernelStartTime(pid int64) string {
	rec, err := unix.SysctlRaw("kern.proc.pid", int(pid))
	return startFromSysctl(rec, err, pid, dragonflyKinfo, Exists)
}
