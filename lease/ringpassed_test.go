package lease

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
)

// TestClaimAfterPassRegistersWithoutARead: a writer whose process has
// just handed the lane on inside its commit registers with the holder
// that commit granted without reading the lane's row first (on LiteFS a
// read transaction is a round of FUSE reads of the page the commit just
// changed), and is served next.
func TestClaimAfterPassRegistersWithoutARead(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLaneSliced(t)
	db := rawDB(t, path)
	epoch := h.Epoch()
	x := startChild(t, "hold", path, "CLEOLEASE_NAME=next")
	waitRegistered(t, e, 1)
	var reads atomic.Int64
	e.setHook(func(op string) error {
		if op == "ring-holder" {
			reads.Add(1)
		}
		return nil
	})
	passTx(t, db, h, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	h.Release()
	again := make(chan *Hold, 1)
	go func() {
		h, err := e.Acquire(context.Background(), "s", "l", req)
		if err != nil {
			t.Error(err)
		}
		again <- h
	}()
	if got := x.expect("held"); got != strconv.FormatInt(epoch+1, 10) {
		t.Fatalf("next holder got epoch %s, want %d", got, epoch+1)
	}
	x.send("go")
	x.expect("commit ok")
	x.expect("released")
	h2 := <-again
	if h2 == nil {
		t.FailNow()
	}
	defer h2.Release()
	// (Above epoch+1: epoch+2 when the next holder hands the lane back,
	// the floor when it released it and this claim took it free.)
	if h2.Epoch() <= epoch+1 || reads.Load() != 0 {
		t.Fatalf("the writer came back at epoch %d (want above %d) after %d reads of the row before registering (want 0)", h2.Epoch(), epoch+1, reads.Load())
	}
}
