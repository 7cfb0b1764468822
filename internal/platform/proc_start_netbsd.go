//go:build netbsd

package platform

import "golang.org/x/sys/unix"

// kernelStartTime reads pid's start time from sysctl
// kern.proc2.KERN_PROC_PID(1).pid.elem_size.1 (sysctl(7)).
func kernelStartTime(pid int64) string {
	rec, err := unix.SysctlRaw("kern.proc2", 1, int(pid), netbsdKinfo.size, 1)
	return startFromSysctl(rec, err, pid, netbsdKinfo, Exists)
}
