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

// StartTime returns "?" for a process that exists and "" otherwise:
// golang.org/x/sys/unix decodes struct kinfo_proc for darwin only, so on
// the BSDs a reused pid is not told from the original (the sidecar's
// liveness lock, tested first, still is).
func StartTime(pid int64) string {
	if !Exists(pid) {
		return ""
	}
	return "?"
}

// Exists reports whether a process with this pid exists.
func Exists(pid int64) bool {
	return !errors.Is(unix.Kill(int(pid), 0), unix.ESRCH)
}
