//go:build darwin

package platform

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// MaxPID is the largest pid macOS hands out (PID_MAX).
const MaxPID = 99999

// BootID returns the boot session's UUID (sysctl kern.bootsessionuuid),
// or "-" when it cannot be read. (Not kern.boottime: the kernel adjusts it
// when the clock is stepped, and a changed boot id would make a live
// holder look like one from another boot.)
func BootID() string {
	s, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil || s == "" {
		return "-"
	}
	return s
}

// PIDNamespace is "-": macOS has no pid namespaces.
func PIDNamespace() string { return "-" }

// StartTime returns the process's start time (sysctl kern.proc.pid,
// p_starttime), or "" when it does not exist or is a zombie.
func StartTime(pid int64) string {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", int(pid))
	if err != nil || kp.Proc.P_pid != int32(pid) || kp.Proc.P_stat == 5 /* SZOMB */ {
		return ""
	}
	return fmt.Sprintf("%d.%06d", kp.Proc.P_starttime.Sec, kp.Proc.P_starttime.Usec)
}

// LookupProcess reports whether process pid runs and, when sysctl shows
// it, its start time ("" otherwise): see darwinState. uid is the holder's
// recorded uid (unused here).
func LookupProcess(pid int64, uid string) (ProcState, string) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", int(pid))
	if err == nil && kp.Proc.P_pid != int32(pid) {
		err = unix.EIO // not the process asked for: no answer
	}
	var killErr error
	if err != nil {
		killErr = unix.Kill(int(pid), 0)
	}
	zombie := err == nil && kp.Proc.P_stat == 5 /* SZOMB */
	s := darwinState(err, zombie, killErr)
	if s != ProcAlive || err != nil {
		return s, ""
	}
	return s, fmt.Sprintf("%d.%06d", kp.Proc.P_starttime.Sec, kp.Proc.P_starttime.Usec)
}

// Exists reports whether a process with this pid exists.
func Exists(pid int64) bool {
	return !errors.Is(unix.Kill(int(pid), 0), unix.ESRCH)
}
