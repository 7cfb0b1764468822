//go:build windows

package platform

import (
	"strconv"

	"golang.org/x/sys/windows"
)

// MaxPID bounds the process ids Windows hands out (they are 32-bit).
const MaxPID = 1<<32 - 1

// BootID is "-": the start time (an absolute FILETIME) already differs
// across boots.
func BootID() string { return "-" }

// PIDNamespace is "-".
func PIDNamespace() string { return "-" }

// StartTime returns the process's creation time (GetProcessTimes, in
// 100 ns units), or "" when it does not exist or has exited.
func StartTime(pid int64) string {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return ""
	}
	defer windows.CloseHandle(h)
	var code uint32
	if windows.GetExitCodeProcess(h, &code) != nil || code != 259 /* STILL_ACTIVE */ {
		return ""
	}
	var created, exited, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &created, &exited, &kernel, &user) != nil {
		return ""
	}
	return strconv.FormatInt(created.Nanoseconds()/100, 10)
}

// LookupProcess reports whether process pid runs and, when it does, its
// creation time ("" when unreadable): see windowsState. uid is the
// holder's recorded uid (unused: Windows records "-").
func LookupProcess(pid int64, uid string) (ProcState, string) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return windowsState(err, nil, 0), ""
	}
	defer windows.CloseHandle(h)
	var code uint32
	codeErr := windows.GetExitCodeProcess(h, &code)
	s := windowsState(nil, codeErr, code)
	if s != ProcAlive {
		return s, ""
	}
	var created, exited, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &created, &exited, &kernel, &user) != nil {
		return s, ""
	}
	return s, strconv.FormatInt(created.Nanoseconds()/100, 10)
}

// Exists reports whether a process with this pid exists (and has not
// exited).
func Exists(pid int64) bool { return StartTime(pid) != "" }
