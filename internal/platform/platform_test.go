package platform

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/testdir"
)

// TestMain lets a test start this binary as a child that only sleeps
// (CLEOLEASE_PLATFORM_SLEEP set) until it is killed, that rings the
// doorbell "a" of the database CLEOLEASE_PLATFORM_RING names with the
// message "ring" from a doorbell "b" of its own, and exits, or that
// announces a kind on the liveness files of the database
// CLEOLEASE_PLATFORM_ANNOUNCE names (announceChild).
func TestMain(m *testing.M) {
	if os.Getenv("CLEOLEASE_PLATFORM_SLEEP") != "" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	if db := os.Getenv("CLEOLEASE_PLATFORM_RING"); db != "" {
		os.Exit(ringFromChild(db))
	}
	if db := os.Getenv("CLEOLEASE_PLATFORM_ANNOUNCE"); db != "" {
		os.Exit(announceChild(db))
	}
	os.Exit(m.Run())
}

func newDB(t *testing.T) string {
	t.Helper()
	p := filepath.Join(testdir.New(t), "x.db")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Two processes' evidence, played by two Locks of one process (OFD
// locks, flock and LockFileEx all belong to the open file, so they see
// each other as another process's would).
func TestLocksEvidence(t *testing.T) {
	db := newDB(t)
	a, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || a == nil {
		t.Fatalf("open a: %v %v", a, err)
	}
	b, err := OpenLocks(db, 0o644, SlotFor("b"))
	if err != nil || b == nil {
		t.Fatalf("open b: %v %v", b, err)
	}
	defer b.Close()
	markA := a.Mark()
	if got := b.Probe(a.Slot(), markA); got != Held {
		t.Fatalf("probe of a live holder: %v", got)
	}
	if got := b.Probe(SlotFor("never"), markA); got == Held {
		t.Fatal("a slot nobody holds is held")
	}
	const base = 1 << 47
	if w, _ := b.AnyWants(base); w {
		t.Fatal("wants before any")
	}
	if err := a.SetWant(base, true); err != nil {
		t.Fatal(err)
	}
	if w, err := b.Wants(base, a.Slot()); !w || err != nil {
		t.Fatalf("a's want not seen: %v %v", w, err)
	}
	if w, _ := b.AnyWants(base); !w {
		t.Fatal("AnyWants misses a's want")
	}
	if w, _ := a.AnyWants(base); w {
		t.Fatal("AnyWants counts the caller's own want")
	}
	if n, _ := b.CountWants(base, 10); n != 1 {
		t.Fatalf("CountWants %d, want 1", n)
	}
	if w, _ := b.AnyWants(base + 1<<WantBits); w {
		t.Fatal("a want leaks into another lane's region")
	}
	if err := a.SetWant(base, false); err != nil {
		t.Fatal(err)
	}
	if w, _ := b.Wants(base, a.Slot()); w {
		t.Fatal("a's want still seen after it dropped it")
	}
	t1, t2 := a.NextTicket(), b.NextTicket()
	if t1 <= 0 || t2 != t1+1 {
		t.Fatalf("tickets %d then %d", t1, t2)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.Probe(SlotFor("a"), markA); got != Released {
		t.Fatalf("probe of a closed holder with its mark: %v, want Released", got)
	}
	if got := b.Probe(SlotFor("a"), "other-mark"); got != Unknown {
		t.Fatalf("probe with another file's mark: %v, want Unknown", got)
	}
	r, err := OpenLocksReadOnly(db)
	if err != nil || r == nil {
		t.Fatalf("read-only: %v %v", r, err)
	}
	defer r.Close()
	if got := r.Probe(b.Slot(), b.Mark()); got != Held {
		t.Fatalf("read-only probe of a live holder: %v", got)
	}
}

// A doorbell's datagrams reach the process they name, never block, and
// fail at once for a process that is not there.
func TestBell(t *testing.T) {
	if PollWake {
		if _, err := ListenBell("x", "a", FileID{}); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("pollwake ListenBell: %v", err)
		}
		t.Skip("no transport in this build (cleolease_pollwake)")
	}
	db := newDB(t)
	locks, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || locks == nil {
		t.Fatal(err)
	}
	defer locks.Close()
	a, b := bellPair(t, db)
	if err := b.Send("a", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	n, err := a.Recv(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("received %q, %v", buf[:n], err)
	}
	if err := b.Send("nobody", []byte("x")); err == nil {
		t.Fatal("a datagram to nobody was delivered")
	}
	if err := b.Send("a", make([]byte, a.MaxDatagram()+1)); err == nil {
		t.Fatal("an oversized datagram was sent")
	}
}

// ringFromChild is the child of TestBellAcrossProcesses.
func ringFromChild(db string) int {
	fi, err := Stat(db)
	if err != nil {
		return 2
	}
	// The portable tier binds in the lock directory that OpenLocks makes.
	if locks, err := OpenLocks(db, 0o644, SlotFor("b")); err == nil && locks != nil {
		defer locks.Close()
	}
	b, err := ListenBell(db, "b", fi.ID)
	if err != nil {
		return 3
	}
	defer b.Close()
	if err := b.Send("a", []byte("ring")); err != nil {
		return 4
	}
	return 0
}

// A datagram sent by another process reaches the doorbell it names:
// both derive the same address from the database file and the holder id.
func TestBellAcrossProcesses(t *testing.T) {
	if PollWake {
		t.Skip("no transport in this build (cleolease_pollwake)")
	}
	db := newDB(t)
	fi, err := Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || locks == nil {
		t.Fatal(err)
	}
	defer locks.Close()
	a, err := ListenBell(db, "a", fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CLEOLEASE_PLATFORM_RING="+db)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v %s", err, out)
	}
	buf := make([]byte, 1<<16)
	n, err := a.Recv(buf)
	if err != nil || string(buf[:n]) != "ring" {
		t.Fatalf("received %q, %v", buf[:n], err)
	}
}

// Close ends a Recv blocked in another goroutine (the doorbell's receiver
// waits for it when its engine closes).
func TestBellCloseEndsRecv(t *testing.T) {
	if PollWake {
		t.Skip("no transport in this build (cleolease_pollwake)")
	}
	db := newDB(t)
	fi, err := Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || locks == nil {
		t.Fatal(err)
	}
	defer locks.Close()
	a, err := ListenBell(db, "a", fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Recv(make([]byte, 1<<16))
		done <- err
	}()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Recv on a closed bell returned a datagram")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Recv still blocked after Close")
	}
	// The name is free again: a new engine of the same holder id listens.
	b, err := ListenBell(db, "a", fi.ID)
	if err != nil {
		t.Fatalf("listening again after Close: %v", err)
	}
	b.Close()
}

// WatchExit reports a process's exit, and an already gone one at once.
func TestWatchExit(t *testing.T) {
	// The child is this test binary, sleeping (see TestMain): every OS
	// has one.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CLEOLEASE_PLATFORM_SLEEP=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	stop, err := WatchExit(int64(cmd.Process.Pid), func() { close(exited) })
	if errors.Is(err, ErrUnsupported) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Skip("no exit watch here")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	select {
	case <-exited:
		t.Fatal("reported before the exit")
	default:
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("exit never reported")
	}
	gone := make(chan struct{})
	stop2, err := WatchExit(int64(cmd.Process.Pid), func() { close(gone) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("a gone process's exit never reported")
	}
}

// This process's identity is what a peer would read for its pid.
func TestIdentity(t *testing.T) {
	id := Identity()
	if st := StartTime(int64(os.Getpid())); st == "" || id != BootID()+"/"+PIDNamespace()+"/"+st {
		t.Fatalf("identity %q, start time %q", id, st)
	}
	if !Exists(int64(os.Getpid())) {
		t.Fatal("this process does not exist")
	}
	if s := SlotFor("x"); s < 1<<20 || s >= 1<<46 {
		t.Fatalf("slot %d out of range", s)
	}
}

// A database path too long for sun_path (104 bytes on macOS and the
// BSDs) still gets a doorbell, in the shared directory (sharedBellDir).
func TestBellLongPath(t *testing.T) {
	if PollWake || !Portable {
		t.Skip("the portable tier's path-bound sockets only (not Linux's default tier, not Windows)")
	}
	dir := filepath.Join(testdir.New(t), "a-directory-name-long-enough", "to-push-the-socket-path", "past-the-104-bytes-of-sun-path")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "x.db")
	os.WriteFile(db, nil, 0o644)
	if len(db+"-cleolease.d") < 104 {
		t.Fatalf("path %d bytes: not long enough", len(db))
	}
	a, b := bellPair(t, db)
	if err := b.Send("a", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := a.Recv(buf); err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("received %q, %v", buf[:n], err)
	}
}

// bellPair listens as holders "a" and "b" of the database db; both bells
// close when the test ends.
func bellPair(t *testing.T, db string) (a, b Bell) {
	t.Helper()
	fi, _ := Stat(db)
	a, err := ListenBell(db, "a", fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = ListenBell(db, "b", fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// BenchmarkBellRoundTrip: one datagram each way between two doorbells of
// the process (a goroutine echoes): the wake-up's latency, twice.
func BenchmarkBellRoundTrip(b *testing.B) {
	if PollWake {
		b.Skip("no transport in this build (cleolease_pollwake)")
	}
	db := filepath.Join(testdir.New(b), "x.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	fi, err := Stat(db)
	if err != nil {
		b.Fatal(err)
	}
	locks, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || locks == nil {
		b.Fatal(err)
	}
	defer locks.Close()
	x, err := ListenBell(db, "a", fi.ID)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	y, err := ListenBell(db, "b", fi.ID)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<16)
		for {
			n, err := y.Recv(buf)
			if err != nil {
				return
			}
			y.Send("a", buf[:n])
		}
	}()
	buf := make([]byte, 1<<16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := x.Send("b", []byte("ping")); err != nil {
			b.Fatal(err)
		}
		if _, err := x.Recv(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	y.Close()
	<-done
}
