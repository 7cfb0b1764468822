//go:build openbsd

package platform

import "golang.org/x/sys/unix"

// kernelStartTime reads pid's start time from sysctl
// kern.proc.KERN_PROC_PID(1).pid.elem_size.1 (sysctl(2)).
func kernelStartTime(pid int64) string {
	rec, err := unix.SysctlRaw("kern.proc", 1, int(pid), openbsdKinfo.size, 1)
	return startFromSysctl(rec, err, pid, openbsdKinfo, Exists)
}
