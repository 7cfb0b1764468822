//go:build freebsd

package platform

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelStartTime reads pid's start time from sysctl kern.proc.pid.<pid>.
func kernelStartTime(pid int64) string {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		if Exists(pid) {
			return "?"
		}
		return ""
	}
	rec, err := unix.SysctlRaw("kern.proc.pid", int(pid))
	return startFromSysctl(rec, err, pid, freebsdKinfo, Exists)
}
