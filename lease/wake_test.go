package lease

import "testing"

// A waiter in another process is woken by the holder's grant: with its
// fallback poll turned off, it looks at the lane only when a datagram
// (or an exit) rings, so it is granted only if the holder's message
// reaches it. Under Wine this is the Windows mailslot doorbell; with no
// transport (cleolease_pollwake) the waiter would wait for an hour.
func TestWaiterWokenByTheGrant(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLane(t)
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=child", "CLEOLEASE_NO_FALLBACK=1")
	waitRegistered(t, e, 1)
	h.Release()
	w.expect("granted")
	if err := w.wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if n := e.Stats().Handoffs; n != 1 {
		t.Fatalf("%d hand-offs, want 1 (the lane handed to the waiter)", n)
	}
}
