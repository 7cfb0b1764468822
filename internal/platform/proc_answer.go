//go:build !plan9

package platform

import (
	"errors"
	"syscall"
)

// This file maps the OS's answers to a ProcState. The functions are
// pure and built on every platform with syscall.Errno, so that each platform's
// mapping runs in tests on Linux with injected answers; the proc_*.go
// files only make the calls.

// killState maps the error of kill(pid, 0). EPERM means the process exists
// but may not be signalled by this one. ESRCH means dead only when the
// kernel shows this process every process that could hold the pid
// (seesAll): FreeBSD answers ESRCH for processes hidden by
// security.bsd.see_other_uids=0 or see_other_gids=0, by a jail, and
// NetBSD's security.curtain likewise (see p_cansee in FreeBSD's
// sys/kern/kern_prot.c). Any other error is unknown.
func killState(err error, seesAll bool) ProcState {
	switch {
	case err == nil, errors.Is(err, syscall.EPERM):
		return ProcAlive
	case errors.Is(err, syscall.ESRCH) && seesAll:
		return ProcDead
	}
	return ProcUnknown
}

// bsdSeesAll reports whether, on the BSDs, kill(pid, 0) would find the
// holder whose effective uid was recorded as holderUID ("" when the row
// has none) from a process of uid selfUID: root outside a jail sees every
// process, any process sees its own user's, and a jailed process sees
// none outside its jail (jailed is true too when that cannot be read).
// A process of the same uid hidden by see_other_gids=0 (its groups share
// none of ours) is not told apart: both run as the same user, which
// practically always shares its primary group.
func bsdSeesAll(holderUID, selfUID string, jailed bool) bool {
	if jailed {
		return false
	}
	return selfUID == "0" || (holderUID != "" && holderUID != "-" && holderUID == selfUID)
}

// Windows error numbers of OpenProcess, as syscall.Errno values (the type
// golang.org/x/sys/windows returns them as), named here so that the
// mapping builds and runs on every platform.
const (
	winErrAccessDenied     = syscall.Errno(5)  // ERROR_ACCESS_DENIED
	winErrInvalidParameter = syscall.Errno(87) // ERROR_INVALID_PARAMETER
	winStillActive         = 259               // STILL_ACTIVE, an exit code
)

// windowsState maps OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION)'s error
// and, when it opened the process, GetExitCodeProcess's error and exit
// code. No process has the pid: ERROR_INVALID_PARAMETER. Another
// account's process (without SeDebugPrivilege) or a protected one gives
// ERROR_ACCESS_DENIED: it exists, but whether it is the holder is unknown
// (see OpenProcess in Microsoft's Win32 documentation, "Process Security
// and Access Rights").
func windowsState(openErr, codeErr error, code uint32) ProcState {
	switch {
	case errors.Is(openErr, winErrInvalidParameter):
		return ProcDead
	case openErr != nil:
		return ProcUnknown
	case codeErr != nil:
		return ProcUnknown
	case code != winStillActive:
		return ProcDead
	}
	return ProcAlive
}

// darwinState maps macOS's sysctl kern.proc.pid: when it answered with
// the process's kinfo_proc (sysctlErr nil), the process is alive unless a
// zombie. An empty answer (unix.SysctlKinfoProc's EIO: no such pid) or any
// error (a sandbox's EPERM, say) is not taken as an exit: kill(pid, 0)
// decides, whose ESRCH macOS gives only for a pid that does not exist.
func darwinState(sysctlErr error, zombie bool, killErr error) ProcState {
	switch {
	case sysctlErr == nil && zombie:
		return ProcDead
	case sysctlErr == nil:
		return ProcAlive
	}
	return killState(killErr, true)
}
