package lease

import (
	"testing"
	"time"
)

// TestDoorbellRecvRestartsAfterAnError: a Recv that fails (a transient
// socket error) does not end the doorbell's receiving goroutine: it
// receives again after a back-off, so the datagrams that follow are
// dispatched; and the goroutine still ends when the engine closes. Before
// the fix the first error ended it for good, leaving the process deaf to
// grants and registrations until it closed.
func TestDoorbellRecvRestartsAfterAnError(t *testing.T) {
	needDoorbell(t)
	o := newFakeOS()
	e := o.open(t, newDB(t), "cl-deaf", 3, nil)
	if !o.send("cl-other", e.HolderID(), []byte{'G'}) { // a plain ring
		t.Fatal("the ring did not reach the socket")
	}
	eventually(t, "the ring to be dispatched after three failed receives", func() bool { return e.bell.granted.Load() == 1 })
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the receiving goroutine")
	}
}
