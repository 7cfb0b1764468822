//go:build linux

package platform

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/testdir"
)

// The sidecar (or the portable tier's lock directory) removed while three
// processes use it, played by Locks of one process (the locks belong to
// the open file): a and b opened before the removal, c after it, on a new
// file. Before a moves, c cannot see it (and a cannot see c's want); after
// Refresh a is seen in both files, sees c's want, and keeps its lock in the
// old file, where b, which has not moved, still finds it alive. When a
// closes, b and c each find it gone — b from the old file whose mark a
// recorded first, c from the new one — and neither close removes the
// sidecar c still uses.
func TestFollowRemovedSidecar(t *testing.T) {
	db := newDB(t)
	const base = 1 << 47
	open := func(id string) Locks {
		l, err := OpenLocks(db, 0o644, SlotFor(id))
		if err != nil || l == nil {
			t.Fatalf("open %s: %v %v", id, l, err)
		}
		return l
	}
	a, b := open("a"), open("b")
	defer b.Close()
	oldMark := a.Mark()
	removeLiveness(t, db)
	c := open("c")
	defer c.Close()
	newMark := c.Mark()
	if Portable {
		// Marks name each process's lifetime file; tests go by path.
		if got := c.Probe(a.Slot(), oldMark); got == Held || got == Released {
			t.Fatalf("before a moves, c's probe of a: %v; want Unknown (a's lifetime file is gone)", got)
		}
	} else {
		if newMark == oldMark {
			t.Fatal("the new sidecar has the removed one's mark")
		}
		if got := c.Probe(a.Slot(), oldMark); got != Unknown {
			t.Fatalf("before a moves, c's probe of a: %v; want Unknown", got)
		}
		if err := c.SetWant(base, true); err != nil {
			t.Fatal(err)
		}
		if w, _ := a.AnyWants(base); w {
			t.Fatal("a saw a want in a sidecar it has not followed")
		}
	}
	if !Portable && a.(Follower).Sees(c.Slot(), newMark) {
		t.Fatal("before its move, a sees the late process's file")
	}
	moved, err := a.(Follower).Refresh()
	if !moved || err != nil {
		t.Fatalf("Refresh after the removal: %v, %v", moved, err)
	}
	if moved, err := a.(Follower).Refresh(); moved || err != nil {
		t.Fatalf("a second Refresh: %v, %v; want no move", moved, err)
	}
	if !a.(Follower).Sees(c.Slot(), newMark) {
		t.Fatal("after its move, a does not see the late process's file")
	}
	if !Portable && a.Mark() != newMark {
		t.Fatalf("a's mark after the move %q; want the new sidecar's %q", a.Mark(), newMark)
	}
	if got := c.Probe(a.Slot(), a.Mark()); got != Held {
		t.Fatalf("c's probe of a after a moved: %v; want Held", got)
	}
	if err := c.SetWant(base, true); err != nil {
		t.Fatal(err)
	}
	if w, err := a.AnyWants(base); !w || err != nil {
		t.Fatalf("a's test of the late waiter's want after the move: %v, %v", w, err)
	}
	if w, err := a.Wants(base, c.Slot()); !w || err != nil {
		t.Fatalf("a's test of the late waiter's want by slot: %v, %v", w, err)
	}
	if !Portable {
		if got := b.Probe(a.Slot(), oldMark); got != Held {
			t.Fatalf("b (not moved) probes a: %v; want Held (a keeps its lock in the old sidecar)", got)
		}
	}
	a.Close()
	if got := c.Probe(a.Slot(), a.Mark()); got != Released {
		t.Fatalf("c's probe of a after a closed: %v; want Released", got)
	}
	if !Portable {
		if got := b.Probe(a.Slot(), oldMark); got != Released {
			t.Fatalf("b's probe of a after a closed: %v; want Released", got)
		}
	}
	b.Close()
	if _, err := os.Stat(SidecarPath(db)); err != nil {
		t.Fatalf("the sidecar c uses after a and b closed: %v", err)
	}
	if Portable {
		if _, err := os.Stat(db + "-cleolease.d"); err != nil {
			t.Fatalf("c's lock directory after a and b closed: %v", err)
		}
	}
}

// removeLiveness removes the liveness files of the database at db, as a
// temporary-file cleaner or rm would.
func removeLiveness(t *testing.T, db string) {
	t.Helper()
	if err := os.Remove(SidecarPath(db)); err != nil {
		t.Fatal(err)
	}
	if Portable {
		if err := os.RemoveAll(db + "-cleolease.d"); err != nil {
			t.Fatal(err)
		}
	}
}

// The Linux tier's file watch reports the sidecar's removal at once, and,
// after Follow, the removal of the file that replaced it.
func TestWatchReportsSidecarGone(t *testing.T) {
	if Portable {
		t.Skip("the portable tier has no file watch")
	}
	db := newDB(t)
	l, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || l == nil {
		t.Fatalf("open: %v %v", l, err)
	}
	defer l.Close()
	fw, err := WatchFiles(l.WatchPath(), db, func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	sw := fw.(SidecarWatch)
	for i := range 2 {
		if err := os.Remove(l.WatchPath()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sw.SidecarGone():
		case <-time.After(20 * time.Second):
			t.Fatalf("removal %d not reported", i+1)
		}
		if moved, err := l.(Follower).Refresh(); !moved || err != nil {
			t.Fatalf("Refresh after removal %d: %v, %v", i+1, moved, err)
		}
		if err := sw.Follow(l.WatchPath()); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkAnyWants is the test every release makes (is another process
// waiting?), on the first generation's own Locks ("file") and through
// the Locks that follow the sidecar ("follow"): what following costs the
// release path while nothing has moved.
func BenchmarkAnyWants(b *testing.B) {
	db := filepath.Join(testdir.New(b), "x.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	l, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || l == nil {
		b.Fatal(l, err)
	}
	defer l.Close()
	f := l.(*followLocks)
	for _, c := range []struct {
		name  string
		locks Locks
	}{{"file", f.newest()}, {"follow", f}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.locks.AnyWants(1 << 47)
			}
		})
	}
}

// A process's announced kind (Announcer) follows the liveness files: after
// they are removed, a process that opens on new ones does not see it until
// the process moves (Refresh), then does, and so does a process that has
// not moved; the moved process sees the newcomer's kind. In the portable
// tier a kind file removed alone is put back by the next Refresh.
func TestFollowAnnounceRemovedSidecar(t *testing.T) {
	db := newDB(t)
	open := func(id string) Locks {
		l, err := OpenLocks(db, 0o644, SlotFor(id))
		if err != nil || l == nil {
			t.Fatalf("open %s: %v %v", id, l, err)
		}
		return l
	}
	announced := func(l Locks, kind int) bool {
		t.Helper()
		got, err := l.(Announcer).Announced(kind)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b := open("a"), open("b")
	defer a.Close()
	defer b.Close()
	if err := a.(Announcer).Announce(1); err != nil {
		t.Fatal(err)
	}
	removeLiveness(t, db)
	c := open("c")
	defer c.Close()
	if err := c.(Announcer).Announce(2); err != nil {
		t.Fatal(err)
	}
	if announced(c, 1) {
		t.Fatal("a newcomer saw the kind of a process that has not followed the files")
	}
	if moved, err := a.(Follower).Refresh(); !moved || err != nil {
		t.Fatalf("Refresh: moved %v, %v", moved, err)
	}
	if !announced(c, 1) {
		t.Fatal("after a moved, the newcomer does not see its kind")
	}
	if !announced(a, 2) {
		t.Fatal("after a moved, it does not see the newcomer's kind")
	}
	if !announced(b, 1) {
		t.Fatal("a process that has not moved lost a's kind")
	}
	if !Portable {
		return
	}
	if err := os.Remove(filepath.Join(db+"-cleolease.d", "k-1")); err != nil {
		t.Fatal(err)
	}
	if announced(c, 1) {
		t.Fatal("a kind seen with its file removed")
	}
	if moved, err := a.(Follower).Refresh(); moved || err != nil {
		t.Fatalf("Refresh with the lock directory in place: moved %v, %v", moved, err)
	}
	if !announced(c, 1) {
		t.Fatal("Refresh did not put back the removed kind file")
	}
}
