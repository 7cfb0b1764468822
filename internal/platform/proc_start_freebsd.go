//go:build freebsd

package platform

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// kernelStartTime reads pid's start time from sysctl kern.proc.pid.<pid>:
// on 64-bit architectures and 386; elsewhere (arm) "?" for a live
// process (see freebsdKinfo386).
func kernelStartTime(pid int64) string {
	l, ok := freebsdLayout(runtime.GOARCH)
	if !ok {
		if Exists(pid) {
			return "?"
		}
		return ""
	}
	rec, err := unix.SysctlRaw("kern.proc.pid", int(pid))
	return startFromSysctl(rec, err, pid, l, Exists)
}
