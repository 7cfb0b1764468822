//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package lease

import "golang.org/x/sys/unix"

// monoNow reads CLOCK_MONOTONIC, comparable across processes.
func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(clockMonotonic, &ts)
	return ts.Nano()
}
