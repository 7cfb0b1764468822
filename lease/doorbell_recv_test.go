package lease

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
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

// An engine whose database file is removed frees its doorbell's name,
// which is the file's inode: the file system may give that inode to the
// next file at once (ext4 does), and this process's engine of that file
// must be able to bind it, and others must reach that engine, not this
// one. The file watch's report of the removal silences it; before, the
// old engine kept the name until its Close, and a waiter's registration
// for a new file on the reused inode reached it (neither refused nor
// served: CI runs of TestRestoredRowOfANonListeningProcess and the
// export/import tests waited their whole bound).
func TestRemovedFileFreesTheDoorbellName(t *testing.T) {
	needDoorbell(t)
	path := newDB(t)
	e := openEngine(t, path, nil)
	h, err := e.Acquire(context.Background(), "s", "l", req) // it listens
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if e.bell.p().bell == nil {
		t.Skip("no doorbell on this platform")
	}
	if e.bell.p().watch == nil {
		t.Skip("no file watch on this platform: the next lease use finds the file gone")
	}
	file := platform.FileID{Dev: e.dev, Ino: e.ino}
	if b, err := platform.ListenBell(e.base, e.holderID, file); err == nil {
		b.Close()
		t.Skip("this platform's doorbell names are not exclusive")
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	eventually(t, "the removed file's doorbell name to be free", func() bool {
		b, err := platform.ListenBell(e.base, e.holderID, file)
		if err != nil {
			return false
		}
		b.Close()
		return true
	})
	if err := e.FileChanged(); !errors.Is(err, ErrFileChanged) {
		t.Fatalf("FileChanged after the removal: %v, want ErrFileChanged", err)
	}
}
