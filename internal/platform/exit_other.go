//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package platform

// WatchExit is not available here: waiters poll.
func WatchExit(pid int64, fn func()) (stop func(), err error) { return nil, ErrUnsupported }
