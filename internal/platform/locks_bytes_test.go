//go:build (linux && !cleolease_portable) || windows

package platform

import (
	"errors"
	"sync"
	"testing"
)

// lockTable models Windows' byte-range locks (LockFileEx) on one file, so
// that byteLocks' logic runs on Linux with Windows' answers: a lock
// belongs to a handle; an exclusive lock cannot overlap any locked region
// and a shared one no exclusively locked region — the handle's own locks
// included ("Exclusive locks cannot overlap an existing locked region of
// a file", LockFile documentation,
// https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-lockfileex);
// and a test takes the lock and drops it (rangelock_windows.go).
type lockTable struct {
	mu     sync.Mutex
	locks  []tableLock
	onBusy func() // called (unlocked) when a lock fails
}

type tableLock struct {
	h        *tableHandle
	start, n int64
	write    bool
}

// tableHandle is one handle's ranges in a lockTable.
type tableHandle struct{ t *lockTable }

func (h *tableHandle) lock(start, n int64, write bool) error {
	t := h.t
	t.mu.Lock()
	for _, l := range t.locks {
		if start < l.start+l.n && l.start < start+n && (write || l.write) {
			t.mu.Unlock()
			if t.onBusy != nil {
				t.onBusy()
			}
			return errBusy
		}
	}
	t.locks = append(t.locks, tableLock{h, start, n, write})
	t.mu.Unlock()
	return nil
}

func (h *tableHandle) unlock(start, n int64) error {
	t := h.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, l := range t.locks {
		if l.h == h && l.start == start && l.n == n {
			t.locks = append(t.locks[:i], t.locks[i+1:]...)
			return nil
		}
	}
	return errors.New("ERROR_NOT_LOCKED")
}

func (h *tableHandle) test(start, n int64, write bool) (bool, error) {
	err := h.lock(start, n, write)
	if err == errBusy {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, h.unlock(start, n)
}

// modelLocks is one process's byteLocks over the model table t.
func modelLocks(t *lockTable, id string) *byteLocks {
	h := &tableHandle{t}
	s := &byteLocks{r: h, slot: SlotFor(id)}
	if err := h.lock(s.slot, 1, true); err != nil {
		panic(err)
	}
	return s
}

// With Windows' answers, a process's own want is not another process's:
// AnyWants and CountWants see only the others (the status command counts
// waiters with CountWants; a holder lingers while AnyWants is true).
func TestWantsOwnNotCountedWindowsModel(t *testing.T) {
	var tab lockTable
	a, b := modelLocks(&tab, "a"), modelLocks(&tab, "b")
	const base = 1 << 47
	if err := a.SetWant(base, true); err != nil {
		t.Fatal(err)
	}
	if w, err := a.AnyWants(base); w || err != nil {
		t.Fatalf("AnyWants of the only waiter: %v %v, want false", w, err)
	}
	if n, err := a.CountWants(base, 10); n != 0 || err != nil {
		t.Fatalf("CountWants of the only waiter: %d %v, want 0", n, err)
	}
	if w, err := b.AnyWants(base); !w || err != nil {
		t.Fatalf("AnyWants of another process: %v %v, want true", w, err)
	}
	if err := b.SetWant(base, true); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*byteLocks{a, b} {
		if n, err := s.CountWants(base, 10); n != 1 || err != nil {
			t.Fatalf("CountWants with two waiters: %d %v, want 1 (the other)", n, err)
		}
	}
	if err := a.SetWant(base, false); err != nil {
		t.Fatal(err)
	}
	if n, err := a.CountWants(base, 10); n != 1 || err != nil {
		t.Fatalf("CountWants after dropping its own want: %d %v, want 1", n, err)
	}
	if n, err := b.CountWants(base, 10); n != 0 || err != nil {
		t.Fatalf("CountWants of the remaining waiter: %d %v, want 0", n, err)
	}
}

// With Windows' answers, a want announced while a peer tests the lane's
// region (its test holds an exclusive lock over the whole region for a
// moment) is not lost: SetWant tries again once the test is over.
func TestSetWantDuringPeerTestWindowsModel(t *testing.T) {
	var tab lockTable
	a, b := modelLocks(&tab, "a"), modelLocks(&tab, "b")
	const base = 1 << 47
	// b is inside AnyWants: it holds the region, and drops it after the
	// first want that fails meanwhile.
	if err := b.r.lock(base, 1<<WantBits, true); err != nil {
		t.Fatal(err)
	}
	busy := 0
	tab.onBusy = func() {
		if busy++; busy == 1 {
			b.r.unlock(base, 1<<WantBits)
		}
	}
	if err := a.SetWant(base, true); err != nil {
		t.Fatalf("SetWant during a peer's test: %v", err)
	}
	if busy == 0 {
		t.Fatal("the model's peer test did not get in the way: the test proves nothing")
	}
	if w, err := b.Wants(base, a.Slot()); !w || err != nil {
		t.Fatalf("the waiter's want after the peer's test: %v %v, want true", w, err)
	}
}

// A want held by a peer that never lets go ends in errBusy, not in a
// want reported taken.
func TestSetWantBusyWindowsModel(t *testing.T) {
	var tab lockTable
	a, b := modelLocks(&tab, "a"), modelLocks(&tab, "b")
	const base = 1 << 47
	if err := b.r.lock(base, 1<<WantBits, true); err != nil {
		t.Fatal(err)
	}
	if err := a.SetWant(base, true); !errors.Is(err, errBusy) {
		t.Fatalf("SetWant under a lock never dropped: %v, want errBusy", err)
	}
	if err := b.r.unlock(base, 1<<WantBits); err != nil {
		t.Fatal(err)
	}
	if w, _ := b.AnyWants(base); w {
		t.Fatal("a failed want is seen")
	}
}

// With Windows' answers (a test takes an exclusive lock and drops it, and
// sees the handle's own locks), a process's announced kind is seen by the
// others, its own is never tested (ErrOwnKind), a test leaves no lock
// behind, and an announcement made while a peer tests that kind is tried
// again once the test is over; one under a lock never dropped ends in
// errBusy, recorded nowhere.
func TestAnnounceWindowsModel(t *testing.T) {
	var tab lockTable
	a, b := modelLocks(&tab, "a"), modelLocks(&tab, "b")
	if err := a.Announce(1); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Announced(1); !got || err != nil {
		t.Fatalf("a's kind seen by b: %v, %v", got, err)
	}
	if _, err := a.Announced(1); !errors.Is(err, ErrOwnKind) {
		t.Fatalf("a testing its own kind: %v; want ErrOwnKind", err)
	}
	if got, err := a.Announced(2); got || err != nil {
		t.Fatalf("a kind nobody announces: %v, %v", got, err)
	}
	if err := b.Announce(2); err != nil {
		t.Fatalf("announcing a kind just tested: %v (the test left a lock behind)", err)
	}
	if got, err := a.Announced(2); !got || err != nil {
		t.Fatalf("b's kind seen by a: %v, %v", got, err)
	}
	if err := b.Announce(1); !errors.Is(err, errKind) {
		t.Fatalf("a second kind: %v; want errKind", err)
	}

	// c is inside Announced(4): it holds the byte, and drops it after
	// the first announcement that fails meanwhile.
	c, d := modelLocks(&tab, "c"), modelLocks(&tab, "d")
	if err := c.r.lock(kindOffset+4, 1, true); err != nil {
		t.Fatal(err)
	}
	busy := 0
	tab.onBusy = func() {
		if busy++; busy == 1 {
			c.r.unlock(kindOffset+4, 1)
		}
	}
	if err := d.Announce(4); err != nil {
		t.Fatalf("Announce during a peer's test: %v", err)
	}
	if busy == 0 {
		t.Fatal("the model's peer test did not get in the way: the test proves nothing")
	}
	tab.onBusy = nil
	if got, err := c.Announced(4); !got || err != nil {
		t.Fatalf("d's kind after the peer's test: %v, %v", got, err)
	}

	// A peer testing kind 6 at the moment this process tests it (two
	// processes of one kind opening at once) holds it for a moment: not an
	// announcement.
	if err := c.r.lock(kindOffset+6, 1, true); err != nil {
		t.Fatal(err)
	}
	busy = 0
	tab.onBusy = func() {
		if busy++; busy == 1 {
			c.r.unlock(kindOffset+6, 1)
		}
	}
	if got, err := d.Announced(6); got || err != nil {
		t.Fatalf("a kind under a peer's test: %v, %v; want not announced", got, err)
	}
	if busy == 0 {
		t.Fatal("the model's peer test did not get in the way: the test proves nothing")
	}
	tab.onBusy = nil

	e := modelLocks(&tab, "e")
	if err := c.r.lock(kindOffset+5, 1, true); err != nil {
		t.Fatal(err)
	}
	if err := e.Announce(5); !errors.Is(err, errBusy) {
		t.Fatalf("Announce under a lock never dropped: %v, want errBusy", err)
	}
	c.r.unlock(kindOffset+5, 1)
	if got, _ := c.Announced(5); got {
		t.Fatal("a failed announcement is seen")
	}
	if err := e.Announce(5); err != nil {
		t.Fatalf("Announce once the lock is gone: %v", err)
	}
}
