//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// WatchExit watches pid with a kqueue of its own holding an EVFILT_PROC
// NOTE_EXIT filter; Go's poller reports the kqueue readable once the
// event is pending.
func WatchExit(pid int64, fn func()) (stop func(), err error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, ErrUnsupported
	}
	unix.CloseOnExec(kq)
	ev := unix.Kevent_t{}
	unix.SetKevent(&ev, int(pid), unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		unix.Close(kq)
		if err == unix.ESRCH {
			go fn()
			return func() {}, nil
		}
		return nil, ErrUnsupported
	}
	if err := unix.SetNonblock(kq, true); err != nil {
		unix.Close(kq)
		return nil, ErrUnsupported
	}
	f := os.NewFile(uintptr(kq), "kqueue")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		ready := false
		err := rc.Read(func(fd uintptr) bool {
			out := make([]unix.Kevent_t, 1)
			n, _ := unix.Kevent(int(fd), nil, out, &unix.Timespec{})
			ready = n > 0
			return ready
		})
		if err == nil && ready {
			fn()
		}
	}()
	return func() { f.Close() }, nil
}
