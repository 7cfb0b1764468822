//go:build linux

package platform

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// MaxPID is the largest pid the kernel hands out (PID_MAX_LIMIT).
const MaxPID = 1 << 22

// BootID returns the kernel's boot id (/proc/sys/kernel/random/boot_id,
// read once: it does not change while a process runs), or "?" when it
// cannot be read; in a test process that called SetTestBootID, the id it
// gave (hostid_linux.go).
func BootID() string {
	if id := testBootID.Load(); id != nil {
		return *id
	}
	return kernelBootID()
}

var kernelBootID = sync.OnceValue(func() string {
	b, err := readFileNoPoll("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "?"
	}
	return string(bytes.TrimSpace(b))
})

// PIDNamespace returns this process's pid namespace ("pid:[4026531836]"):
// a pid recorded in another namespace means nothing here.
func PIDNamespace() string {
	s, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "?"
	}
	return s
}

// StartTime returns field 22 of /proc/PID/stat (clock ticks since boot),
// or "" when the process does not exist, has exited (a zombie) or cannot
// be read.
func StartTime(pid int64) string {
	b, err := readFileNoPoll("/proc/" + pidString(pid) + "/stat")
	if err != nil {
		return ""
	}
	st, _ := statStart(b)
	return st
}

// statStart reads the start time from a /proc/PID/stat line, and reports
// whether the process runs (false for a zombie or dead one, or a line it
// cannot parse). The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its closing parenthesis.
func statStart(b []byte) (string, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19]. A zombie (Z) or dead (X)
	// process has exited; only its parent has not reaped it yet.
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}

// LookupProcess reports whether process pid runs and, when /proc shows
// it, its start time ("" otherwise). When /proc/PID/stat cannot be read —
// hidepid=2 hides other users' processes, or no procfs is mounted —
// kill(pid, 0) decides, which hidepid does not restrict, so its ESRCH
// proves the pid unused in this pid namespace. uid is the holder's
// recorded uid (unused here).
func LookupProcess(pid int64, uid string) (ProcState, string) {
	if b, err := readFileNoPoll("/proc/" + pidString(pid) + "/stat"); err == nil {
		if st, ok := statStart(b); ok {
			return ProcAlive, st
		}
		return ProcDead, ""
	}
	return killState(unix.Kill(int(pid), 0), true), ""
}

// Exists reports whether a process with this pid exists (kill(pid, 0) is
// not ESRCH).
func Exists(pid int64) bool {
	return !errors.Is(unix.Kill(int(pid), 0), unix.ESRCH)
}
