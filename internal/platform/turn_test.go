//go:build linux || windows || darwin || freebsd || netbsd || openbsd || dragonfly

package platform

import (
	"runtime"
	"testing"
)

// The write turn between two processes, played by two Locks of one
// process (their locks belong to the open file): one holds it, the
// other's Try fails and its Wait ends only once the holder drops it.
func TestTurnBetweenTwoOpenFiles(t *testing.T) {
	a, b := twoLocks(t)
	ta, tb := TurnOf(a), TurnOf(b)
	if ta == nil || tb == nil {
		t.Fatal("no write turn on a Locks of this platform")
	}
	if ok, err := ta.Try(); !ok || err != nil {
		t.Fatalf("a's Try of a free turn: %v %v", ok, err)
	}
	if ok, err := tb.Try(); ok || err != nil {
		t.Fatalf("b's Try while a holds the turn: %v %v; want false", ok, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- tb.Wait() }()
	select {
	case err := <-waited:
		t.Fatalf("b's Wait ended while a holds the turn: %v", err)
	default:
	}
	if err := ta.Drop(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("b's Wait: %v", err)
	}
	if ok, _ := ta.Try(); ok {
		t.Fatal("a took the turn b was granted")
	}
	if err := tb.Drop(); err != nil {
		t.Fatal(err)
	}
	if ok, err := ta.Try(); !ok || err != nil {
		t.Fatalf("a's Try after b dropped: %v %v", ok, err)
	}
	ta.Drop()
}

// A waiting process announces itself where the platform can tell
// (TurnQueue): another sees it, yields until it withdraws, and sees no
// one after.
func TestTurnQueue(t *testing.T) {
	a, b := twoLocks(t)
	qa, ok := TurnOf(a).(TurnQueue)
	// Only the Linux tier announces waiters (F_OFD_GETLK tells which
	// byte is locked); on Windows and the portable tier a free turn goes
	// to whoever asks first.
	if want := runtime.GOOS == "linux" && !Portable; ok != want {
		t.Fatalf("the turn announces waiters: %v; want %v on %s (portable %v)", ok, want, runtime.GOOS, Portable)
	}
	if !ok {
		return
	}
	qb := TurnOf(b).(TurnQueue)
	if w, err := qb.Wanted(); w || err != nil {
		t.Fatalf("wanted before any announcement: %v %v", w, err)
	}
	if err := qa.Announce(true); err != nil {
		t.Fatal(err)
	}
	if w, err := qb.Wanted(); !w || err != nil {
		t.Fatalf("a's announcement not seen: %v %v", w, err)
	}
	if w, _ := qa.Wanted(); w {
		t.Fatal("a sees its own announcement")
	}
	yielded := make(chan error, 1)
	go func() { yielded <- qb.Yield() }()
	select {
	case err := <-yielded:
		t.Fatalf("b's Yield ended while a still waits: %v", err)
	default:
	}
	if err := qa.Announce(false); err != nil {
		t.Fatal(err)
	}
	if err := <-yielded; err != nil {
		t.Fatal(err)
	}
	if w, _ := qb.Wanted(); w {
		t.Fatal("a's withdrawn announcement still seen")
	}
}

// twoLocks opens two Locks of one database, two processes as far as their
// locks can tell; they close at the end of the test.
func twoLocks(t *testing.T) (a, b Locks) {
	t.Helper()
	db := newDB(t)
	for i, slot := range []string{"a", "b"} {
		l, err := OpenLocks(db, 0o644, SlotFor(slot))
		if err != nil || l == nil {
			t.Fatalf("open %s: %v %v", slot, l, err)
		}
		t.Cleanup(func() { l.Close() })
		if i == 0 {
			a = l
		} else {
			b = l
		}
	}
	return a, b
}
