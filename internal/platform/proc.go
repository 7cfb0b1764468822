package platform

import (
	"os"
	"strconv"
)

// Identity returns this process's identity as a holder_start prefix:
// "boot/pid-namespace/start-time". A peer compares it with what BootID,
// PIDNamespace and StartTime report for the same pid: a different boot or
// namespace makes the pid meaningless, a different start time means the
// pid was reused. Parts a platform cannot tell are "-" (the same for every
// process, so they never decide) or "?".
func Identity() string {
	return BootID() + "/" + PIDNamespace() + "/" + StartTime(int64(os.Getpid()))
}

// pidString formats pid for /proc paths and messages.
func pidString(pid int64) string { return strconv.FormatInt(pid, 10) }
