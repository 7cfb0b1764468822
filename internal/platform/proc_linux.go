//go:build linux

package platform

import (
	"bytes"
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxPID is the largest pid the kernel hands out (PID_MAX_LIMIT).
const MaxPID = 1 << 22

// BootID returns the kernel's boot id (/proc/sys/kernel/random/boot_id),
// or "?" when it cannot be read.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "?"
	}
	return string(bytes.TrimSpace(b))
}

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
// or "" when the process does not exist or has exited (a zombie). The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted after its closing parenthesis.
func StartTime(pid int64) string {
	b, err := os.ReadFile("/proc/" + pidString(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19]. A zombie (Z) or dead (X)
	// process has exited; only its parent has not reaped it yet.
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// Exists reports whether a process with this pid exists (kill(pid, 0) is
// not ESRCH).
func Exists(pid int64) bool {
	return !errors.Is(unix.Kill(int(pid), 0), unix.ESRCH)
}
