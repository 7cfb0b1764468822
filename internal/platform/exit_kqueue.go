//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package platform

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// WatchExit watches pid with a kqueue of its own holding an EVFILT_PROC
// NOTE_EXIT filter, waited on by a blocking kevent(2) on a goroutine of its
// own (runExitWatch). A kqueue cannot be handed to Go's poller: os.NewFile
// registers it for reading and writing, which the kernels refuse for a
// kqueue, and every read then fails. stop wakes the wait through a pipe
// whose read end the same kqueue watches (EVFILT_READ exists on every BSD;
// EVFILT_USER does not on all of them).
func WatchExit(pid int64, fn func()) (stop func(), err error) {
	src, err := newKqueueExit(pid)
	if err == unix.ESRCH {
		go fn()
		return func() {}, nil
	}
	if err != nil {
		return nil, ErrUnsupported
	}
	return runExitWatch(src, fn, warnExitWatch(pid)), nil
}

// kqueueExit is a kqueue reporting one process's exit, or a byte written
// to its wake pipe.
type kqueueExit struct {
	kq, rd, wr int
}

// newKqueueExit registers pid's exit and the wake pipe; unix.ESRCH when
// pid has already exited.
func newKqueueExit(pid int64) (*kqueueExit, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(kq)
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		unix.Close(kq)
		return nil, err
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	k := &kqueueExit{kq: kq, rd: p[0], wr: p[1]}
	var evs [2]unix.Kevent_t
	unix.SetKevent(&evs[0], p[0], unix.EVFILT_READ, unix.EV_ADD)
	unix.SetKevent(&evs[1], int(pid), unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	evs[1].Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, evs[:1], nil, nil); err != nil {
		k.Close()
		return nil, err
	}
	if _, err := unix.Kevent(kq, evs[1:], nil, nil); err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

// Wait blocks in kevent(2) with no timeout.
func (k *kqueueExit) Wait() (bool, error) {
	var out [2]unix.Kevent_t
	n, err := unix.Kevent(k.kq, nil, out[:], nil)
	if err != nil {
		return false, err
	}
	exited := false
	for _, ev := range out[:n] {
		if ev.Flags&unix.EV_ERROR != 0 {
			return false, syscall.Errno(ev.Data)
		}
		if ev.Filter == unix.EVFILT_PROC {
			exited = true
		}
	}
	return exited, nil
}

// Wake writes a byte to the wake pipe.
func (k *kqueueExit) Wake() { unix.Write(k.wr, []byte{0}) }

// Close closes the kqueue and the pipe.
func (k *kqueueExit) Close() {
	unix.Close(k.kq)
	unix.Close(k.rd)
	unix.Close(k.wr)
}
