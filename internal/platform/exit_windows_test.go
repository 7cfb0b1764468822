//go:build windows

package platform

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/windows"
)

// After a watched process exits, the event that stop sets stays open
// until stop is called: a stop after the exit (the usual order) must not
// set a closed handle, whose value Windows may have given to another
// object meanwhile.
func TestWatchExitKeepsTheEventUntilStop(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CLEOLEASE_PLATFORM_SLEEP=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan windows.Handle, 2)
	exited := make(chan struct{})
	stop := watchExitHandles(h, ev, func() { close(exited) }, func(x windows.Handle) error {
		closed <- x
		return windows.CloseHandle(x)
	})
	cmd.Process.Kill()
	cmd.Wait()
	<-exited
	// The goroutine closes the process handle last: once it is closed,
	// the goroutine is done with the event.
	if x := <-closed; x != h {
		t.Fatalf("closed handle %v before the process handle %v (the event %v, before stop)", x, h, ev)
	}
	select {
	case x := <-closed:
		t.Fatalf("closed %v before stop", x)
	default:
	}
	stop()
	if x := <-closed; x != ev {
		t.Fatalf("stop closed %v, want the event %v", x, ev)
	}
	stop() // a second stop does nothing
}
