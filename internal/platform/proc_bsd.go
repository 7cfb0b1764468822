//go:build freebsd || netbsd || openbsd || dragonfly

package platform

import (
	"errors"

	"golang.org/x/sys/unix"
)

// MaxPID bounds the pids the BSDs hand out (FreeBSD's PID_MAX is 99999,
// the others' lower).
const MaxPID = 99999

// BootID is "-": kern.boottime moves when the clock is stepped, and a
// changed boot id would make a live holder look like one from another
// boot. A row left by another boot is then judged by its pid alone.
func BootID() string { return "-" }

// PIDNamespace is "-" (a jail shares the host's pid space).
func PIDNamespace() string { return "-" }

// StartTime returns the process's start time ("sec.usec", from its
// sysctl process record: kernelStartTime), "" when it does not exist or
// is a zombie, or "?" when the record cannot be read. A "?" never matches
// (compareStart), so a reused pid is not taken for its dead holder.
func StartTime(pid int64) string {
	return kernelStartTime(pid)
}

// Exists reports whether a process with this pid exists.
func Exists(pid int64) bool {
	return !errors.Is(unix.Kill(int(pid), 0), unix.ESRCH)
}
