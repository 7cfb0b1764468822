//go:build windows

package platform

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/windows"
)

// WatchExit waits on a handle of process pid (and an event that stop
// sets) on a goroutine of its own.
func WatchExit(pid int64, fn func()) (stop func(), err error) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return nil, ErrUnsupported
	}
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		windows.CloseHandle(h)
		return nil, ErrUnsupported
	}
	return watchExitHandles(h, ev, fn, windows.CloseHandle), nil
}

// watchExitHandles waits on the process handle h and the event ev on a
// goroutine and runs fn when the process exits; stop sets ev. The
// goroutine closes h when its wait ends; ev is closed (closeHandle) only
// once both the wait has ended and stop was called, so that stop never
// sets a closed handle: Windows reuses handle values, and an event set
// through a stale one may be another's (under Wine, the semaphore a Go
// runtime thread sleeps on: woken with no work, it crashed the process).
func watchExitHandles(h, ev windows.Handle, fn func(), closeHandle func(windows.Handle) error) (stop func()) {
	var refs atomic.Int32
	refs.Store(2) // the goroutine's and stop's
	release := func() {
		if refs.Add(-1) == 0 {
			closeHandle(ev)
		}
	}
	go func() {
		defer closeHandle(h)
		defer release()
		r, err := windows.WaitForMultipleObjects([]windows.Handle{h, ev}, false, windows.INFINITE)
		if err == nil && r == windows.WAIT_OBJECT_0 {
			fn()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			windows.SetEvent(ev)
			release()
		})
	}
}
