//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package platform

// MaxPID bounds the pids this platform may hand out.
const MaxPID = 1<<31 - 1

// BootID is "-": unknown here.
func BootID() string { return "-" }

// PIDNamespace is "-".
func PIDNamespace() string { return "-" }

// StartTime is "?": this platform cannot tell a process's start time, so
// every pid is taken to exist (a dead holder is then found by its
// liveness lock or, failing that, only by the TTL policy).
func StartTime(pid int64) string { return "?" }

// Exists reports true: unknown here, so never judged dead.
func Exists(pid int64) bool { return true }

// LookupProcess reports ProcUnknown: this platform cannot tell.
func LookupProcess(pid int64, uid string) (ProcState, string) { return ProcUnknown, "" }
