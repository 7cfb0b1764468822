package platform

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/cleocode/cleolease/internal/proctest"
)

// Two processes' announcements, played by two Locks of one process (OFD
// locks, flock and LockFileEx belong to the open file, so they see each
// other as another process's would): each sees the other's kind, never
// its own (ErrOwnKind), and a kind nobody announces is unseen; a closed
// process's announcement is gone; a process announces one kind only.
func TestAnnounceKinds(t *testing.T) {
	if !KeepsLocks {
		t.Skip("no liveness files on this platform")
	}
	db := newDB(t)
	open := func(id string) Announcer {
		l, err := OpenLocks(db, 0o644, SlotFor(id))
		if err != nil || l == nil {
			t.Fatalf("open %s: %v %v", id, l, err)
		}
		return l.(Announcer)
	}
	a, b := open("a"), open("b")
	for _, l := range []Announcer{a, b} {
		if got, err := l.Announced(1); got || err != nil {
			t.Fatalf("before any announcement: %v, %v", got, err)
		}
	}
	if err := a.Announce(1); err != nil {
		t.Fatal(err)
	}
	if err := a.Announce(1); err != nil {
		t.Fatalf("the same kind again: %v", err)
	}
	if err := a.Announce(2); err == nil {
		t.Fatal("a second kind was announced")
	}
	if got, err := b.Announced(1); !got || err != nil {
		t.Fatalf("a's kind seen by b: %v, %v; want true", got, err)
	}
	if _, err := a.Announced(1); !errors.Is(err, ErrOwnKind) {
		t.Fatalf("a testing its own kind: %v; want ErrOwnKind", err)
	}
	if got, err := b.Announced(2); got || err != nil {
		t.Fatalf("a kind nobody announces: %v, %v", got, err)
	}
	if err := b.Announce(1); err != nil {
		t.Fatalf("a second process of the same kind: %v", err)
	}
	// A test leaves nothing behind: the kind can still be announced, and
	// the other process's announcement is still seen.
	if err := b.(Locks).Close(); err != nil {
		t.Fatal(err)
	}
	b = open("b")
	defer b.(Locks).Close()
	if got, err := b.Announced(1); !got || err != nil {
		t.Fatalf("a's kind after b reopened: %v, %v; want true", got, err)
	}
	if err := b.Announce(3); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Announced(3); !got || err != nil {
		t.Fatalf("b's kind seen by a: %v, %v; want true", got, err)
	}
	if err := a.(Locks).Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Announced(1); got || err != nil {
		t.Fatalf("the kind of a closed process: %v, %v; want gone", got, err)
	}
	if r, err := OpenLocksReadOnly(db); err == nil && r != nil {
		defer r.Close()
		if err := r.(Announcer).Announce(4); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("read-only Announce: %v; want ErrUnsupported", err)
		}
	}
}

// Processes of one kind testing another kind at once (opening together)
// never take each other's tests for an announcement: on Windows and in
// the portable tier a test holds an exclusive lock for a moment, and a
// kind found held is tested again (testTries).
func TestAnnouncedUnderPeersTests(t *testing.T) {
	if !KeepsLocks {
		t.Skip("no liveness files on this platform")
	}
	db := newDB(t)
	var ls []Locks
	for i := 0; i < 4; i++ {
		l, err := OpenLocks(db, 0o644, SlotFor("p"+strconv.Itoa(i)))
		if err != nil || l == nil {
			t.Fatalf("open: %v %v", l, err)
		}
		if i > 0 {
			defer l.Close()
		}
		ls = append(ls, l)
	}
	// A process of kind 1 came and went: in the portable tier its kind
	// file stays, unlocked, for the tests to lock.
	if err := ls[0].(Announcer).Announce(1); err != nil {
		t.Fatal(err)
	}
	if err := ls[0].Close(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ls))
	for _, l := range ls[1:] {
		if err := l.(Announcer).Announce(0); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(a Announcer) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				if got, err := a.Announced(1); got || err != nil {
					errs <- fmt.Errorf("test %d of a kind nobody announces: %v, %v", i, got, err)
					return
				}
			}
		}(l.(Announcer))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// announceChild is the child of TestAnnounceReleasedOnExit: it opens the
// liveness files of db, announces the kind CLEOLEASE_PLATFORM_KIND, prints
// "announced" and waits until its stdin ends or it is killed.
func announceChild(db string) int {
	kind, _ := strconv.Atoi(os.Getenv("CLEOLEASE_PLATFORM_KIND"))
	l, err := OpenLocks(db, 0o644, SlotFor("child"))
	if err != nil || l == nil {
		fmt.Println("ERR open", l, err)
		return 1
	}
	if err := l.(Announcer).Announce(kind); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("announced")
	bufio.NewScanner(os.Stdin).Scan()
	return 0
}

// Another process's announcement is seen while it runs and gone once it
// is killed: the kernel drops its lock, nothing is left to clean up.
func TestAnnounceReleasedOnExit(t *testing.T) {
	if !KeepsLocks {
		t.Skip("no liveness files on this platform")
	}
	db := newDB(t)
	l, err := OpenLocks(db, 0o644, SlotFor("parent"))
	if err != nil || l == nil {
		t.Fatalf("open: %v %v", l, err)
	}
	defer l.Close()
	me := l.(Announcer)
	if err := me.Announce(0); err != nil {
		t.Fatal(err)
	}
	const kind = 3
	c := proctest.Start(t, "CLEOLEASE_PLATFORM_ANNOUNCE="+db, "CLEOLEASE_PLATFORM_KIND="+strconv.Itoa(kind), proctest.GoraceNoExitSleep())
	c.Expect("announced")
	if got, err := me.Announced(kind); !got || err != nil {
		t.Fatalf("a live child's kind: %v, %v; want seen", got, err)
	}
	c.Cmd.Process.Kill()
	c.Cmd.Wait()
	// Windows drops a dead process's locks "after a delay that depends on
	// available system resources" (LockFileEx documentation); Linux and
	// the BSDs at its exit.
	proctest.Eventually(t, "the killed child's announcement to go", func() bool {
		got, err := me.Announced(kind)
		return err == nil && !got
	})
}
