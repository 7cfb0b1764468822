//go:build windows

package platform

import "golang.org/x/sys/windows"

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
	go func() {
		defer windows.CloseHandle(h)
		defer windows.CloseHandle(ev)
		r, err := windows.WaitForMultipleObjects([]windows.Handle{h, ev}, false, windows.INFINITE)
		if err == nil && r == windows.WAIT_OBJECT_0 {
			fn()
		}
	}()
	return func() { windows.SetEvent(ev) }, nil
}
