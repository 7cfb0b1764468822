//go:build !plan9

package platform

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// Each platform's mapping of the OS's answers, injected: a process the OS
// hides or refuses access to is unknown, never dead.
func TestProcStateMapping(t *testing.T) {
	other := errors.New("EINVAL or anything unexpected")
	cases := []struct {
		name string
		got  ProcState
		want ProcState
	}{
		// kill(pid, 0) where the kernel shows every process (Linux, macOS).
		{"kill ok", killState(nil, true), ProcAlive},
		{"kill EPERM (another user's process)", killState(syscall.EPERM, true), ProcAlive},
		{"kill ESRCH, nothing hidden", killState(syscall.ESRCH, true), ProcDead},
		{"kill other error", killState(other, true), ProcUnknown},
		// The BSDs: ESRCH proves an exit only for a holder the kernel would show.
		{"bsd ESRCH, same uid", killState(syscall.ESRCH, bsdSeesAll("1001", "1001", false)), ProcDead},
		{"bsd ESRCH, another uid (see_other_uids=0)", killState(syscall.ESRCH, bsdSeesAll("1002", "1001", false)), ProcUnknown},
		{"bsd ESRCH, uid not recorded", killState(syscall.ESRCH, bsdSeesAll("", "1001", false)), ProcUnknown},
		{"bsd ESRCH, root outside a jail", killState(syscall.ESRCH, bsdSeesAll("1002", "0", false)), ProcDead},
		{"bsd ESRCH, root in a jail", killState(syscall.ESRCH, bsdSeesAll("1002", "0", true)), ProcUnknown},
		{"bsd ESRCH, same uid in a jail", killState(syscall.ESRCH, bsdSeesAll("1001", "1001", true)), ProcUnknown},
		{"bsd EPERM, another uid", killState(syscall.EPERM, bsdSeesAll("1002", "1001", false)), ProcAlive},
		// Windows: OpenProcess, then GetExitCodeProcess.
		{"windows no such pid", windowsState(winErrInvalidParameter, nil, 0), ProcDead},
		{"windows access denied (another account, protected)", windowsState(winErrAccessDenied, nil, 0), ProcUnknown},
		{"windows other open error", windowsState(other, nil, 0), ProcUnknown},
		{"windows running", windowsState(nil, nil, winStillActive), ProcAlive},
		{"windows exited", windowsState(nil, nil, 1), ProcDead},
		{"windows exit code unreadable", windowsState(nil, other, 0), ProcUnknown},
		// macOS: sysctl kern.proc.pid, then kill(pid, 0) when it gives no answer.
		{"darwin running", darwinState(nil, false, nil), ProcAlive},
		{"darwin zombie", darwinState(nil, true, nil), ProcDead},
		{"darwin sysctl empty, kill ESRCH", darwinState(syscall.EIO, false, syscall.ESRCH), ProcDead},
		{"darwin sysctl EPERM (sandbox), kill ok", darwinState(syscall.EPERM, false, nil), ProcAlive},
		{"darwin sysctl ENOMEM, kill EPERM", darwinState(syscall.ENOMEM, false, syscall.EPERM), ProcAlive},
		{"darwin sysctl error, kill other", darwinState(syscall.ENOMEM, false, other), ProcUnknown},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// This platform's LookupProcess on real processes: this one runs with the
// start time StartTime reports; a pid out of use is dead where the
// platform can tell.
func TestLookupProcess(t *testing.T) {
	pid := int64(os.Getpid())
	s, st := LookupProcess(pid, UID())
	if s != ProcAlive || st != StartTime(pid) {
		t.Fatalf("this process: %v %q, want alive %q", s, st, StartTime(pid))
	}
	if s, _ := LookupProcess(MaxPID+1, UID()); s == ProcAlive {
		t.Fatalf("pid %d beyond MaxPID: %v", int64(MaxPID)+1, s)
	}
}
