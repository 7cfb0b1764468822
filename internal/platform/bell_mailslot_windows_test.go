//go:build windows && !cleolease_pollwake

package platform

import "testing"

// A message longer than the receive buffer (only another program sends
// one) is dropped, not left at the head of the mailslot where it would
// block every message behind it.
func TestMailslotDropsOversizedMessage(t *testing.T) {
	db := newDB(t)
	fi, err := Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ListenBell(db, "a", fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	name := mailslotName(fi.ID, "a")
	// Refused by the mailslot (its maximum message size) or accepted:
	// either way the next message must come through.
	writeMailslot(name, make([]byte, maxMailslotDatagram+1))
	if err := writeMailslot(name, []byte("after")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := a.Recv(buf)
	if err != nil || string(buf[:n]) != "after" {
		t.Fatalf("received %q, %v; want the message after the oversized one", buf[:n], err)
	}
}
