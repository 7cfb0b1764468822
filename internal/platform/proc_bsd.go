//go:build freebsd || netbsd || openbsd || dragonfly

package platform

import (
	"errors"
	"runtime"

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

// LookupProcess reports whether process pid runs and its start time
// (StartTime; "" when unknown). kill(pid, 0) decides, with the holder's
// recorded effective uid (uid, "" when the row has none) telling whether
// its ESRCH proves an exit: see killState and bsdSeesAll.
func LookupProcess(pid int64, uid string) (ProcState, string) {
	s := killState(unix.Kill(int(pid), 0), bsdSeesAll(uid, UID(), jailed()))
	if s != ProcAlive {
		return s, ""
	}
	return s, StartTime(pid)
}

// jailed reports whether this process runs in a FreeBSD jail
// (security.jail.jailed), or may (the sysctl cannot be read: OpenBSD and
// NetBSD have no such sysctl and no jails, but their ESRCH then stays
// unknown unless the uids match, which jailed would not change — so a
// failed read is taken as jailed only on FreeBSD and DragonFly).
func jailed() bool {
	v, err := unix.SysctlUint32("security.jail.jailed")
	if err != nil {
		return runtime.GOOS == "freebsd" || runtime.GOOS == "dragonfly"
	}
	return v != 0
}

// Exists reports whether a process with this pid exists.
func Exists(pid int64) bool {
	return !errors.Is(unix.Kill(int(pid), 0), unix.ESRCH)
}
