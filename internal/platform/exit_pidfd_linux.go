//go:build linux

package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// WatchExit watches pid through a pidfd, which Go's poller reports
// readable once the process exits.
func WatchExit(pid int64, fn func()) (stop func(), err error) {
	fd, err := unix.PidfdOpen(int(pid), unix.PIDFD_NONBLOCK)
	if err != nil {
		if err == unix.ESRCH {
			go fn()
			return func() {}, nil
		}
		return nil, ErrUnsupported
	}
	return watchReadable(os.NewFile(uintptr(fd), "pidfd"), fn)
}

// watchReadable calls fn when f (registered with Go's poller) becomes
// readable, unless stop closes it first.
func watchReadable(f *os.File, fn func()) (stop func(), err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		ready := false
		err := rc.Read(func(fd uintptr) bool {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, _ := unix.Poll(p, 0)
			ready = n > 0
			return ready
		})
		if err == nil && ready {
			fn()
		}
	}()
	return func() { f.Close() }, nil
}
