package lease

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 28 item 1: a grant written for a waiter that is giving up is
// used or passed on, whatever the timing of its datagram and whether one
// arrives at all (settle.go). The engines here play separate processes on
// a fakeOS (fakeos_test.go); their steps are ordered with fault hooks.

// parkAt returns a fault hook that parks the first call of op until
// proceed is closed, closing reached when it gets there; other calls pass.
func parkAt(op string, reached, proceed chan struct{}) func(string) error {
	var once sync.Once
	return func(o string) error {
		if o == op {
			once.Do(func() {
				close(reached)
				<-proceed
			})
		}
		return nil
	}
}

// lateGrantSetup opens a holder H and a waiter W on a new file, lets H
// take lane s/l, starts W's Acquire (with a context the test cancels)
// and waits until H has W's registration. W's Acquire error arrives on
// the returned channel.
func lateGrantSetup(t *testing.T, o *fakeOS) (path string, h, w *Engine, hh *Hold, cancelW context.CancelFunc, wDone <-chan error) {
	t.Helper()
	path = newDB(t)
	h = o.open(t, path, "cl-holder", 0, func(o *Options) { o.Linger = 0 })
	w = o.open(t, path, "cl-waiter", 0, func(o *Options) { o.Linger = 0 })
	var err error
	hh, err = h.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		g, err := w.Acquire(wctx, "s", "l", req)
		if g != nil {
			g.Release()
		}
		done <- err
	}()
	waitRegistered(t, h, 1)
	return path, h, w, hh, cancel, done
}

// activeHolder is the holder of lane s/l's active row ("" for none).
func activeHolder(t *testing.T, path string) string {
	t.Helper()
	rs := relActive(t, rawDB(t, path), "s", "l")
	if len(rs) == 0 {
		return ""
	}
	return rs[0].holder
}

// acquireWithin fails t unless e takes lane s/l within 10 s (a lane left
// with a live holder that does not know it holds it never comes back).
func acquireWithin(t *testing.T, e *Engine, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	h.Release()
}

// TestLateGrantReachingAnEndingClaimIsPassedOn is the sequence of the
// review (issue 28 item 1): H's hand-off has tested W's want byte and
// written W's grant, not committed yet; W's context ends: abandon
// releases the want byte and quit reads the row, which still names H; H
// commits and rings; W's grant datagram arrives while W's claim is still
// ending (its deferred end has not run), so it only marks the claim's
// slot; the claim ends. Before the fix the end forgot the datagram and
// nothing adopted the lane: the row named W, alive and unaware, for good,
// and H's next Acquire registered with W and waited. Now the lane settles:
// W adopts the row and its linger watcher hands it on.
func TestLateGrantReachingAnEndingClaimIsPassedOn(t *testing.T) {
	needDoorbell(t)
	o := newFakeOS()
	path, h, w, hh, cancelW, wDone := lateGrantSetup(t, o)
	hReached, hProceed := make(chan struct{}), make(chan struct{})
	h.setHook(parkAt("handoff/commit", hReached, hProceed))
	wReached, wProceed := make(chan struct{}), make(chan struct{})
	w.setHook(parkAt("quit", wReached, wProceed))
	released := make(chan struct{})
	go func() {
		hh.Release() // hands the lane to W: parks before its COMMIT
		close(released)
	}()
	<-hReached
	cancelW()
	<-wReached // W released its want byte and read the row: still H's
	if got := activeHolder(t, path); got != h.HolderID() {
		t.Fatalf("the row names %q before the hand-off committed, want H", got)
	}
	close(hProceed)
	<-released // committed, and W's doorbell rung
	wl := w.knownLane("s", "l")
	eventually(t, "W's grant datagram to reach its ending claim", func() bool {
		wl.mu.Lock()
		defer wl.mu.Unlock()
		return wl.claimSlot.running && wl.claimSlot.incoming
	})
	close(wProceed)
	if err := <-wDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("W's Acquire: %v, want its context's error", err)
	}
	h.setHook(nil)
	w.setHook(nil)
	acquireWithin(t, h, "the lane stayed with the waiter that gave up")
}

// TestLateGrantWithoutDatagramIsPassedOn: every grant datagram to the
// waiter W is lost, and W gives up right after the holder's hand-off
// has tested its want byte (the hand-off commits W's grant after W's
// Acquire has returned). Nothing tells W of the grant; the lane settles
// all the same — by reading the row, never by a message — and another
// waiter, X, gets the lane.
func TestLateGrantWithoutDatagramIsPassedOn(t *testing.T) {
	needDoorbell(t)
	o := newFakeOS()
	path, h, w, hh, cancelW, wDone := lateGrantSetup(t, o)
	o.setDrop(func(from, to string, msg []byte) bool {
		return to == w.HolderID() && len(msg) > 0 && (msg[0] == 'g' || msg[0] == 'G')
	})
	x := o.open(t, path, "cl-next", 0, nil)
	hReached, hProceed := make(chan struct{}), make(chan struct{})
	h.setHook(parkAt("handoff/commit", hReached, hProceed))
	released := make(chan struct{})
	go func() {
		hh.Release()
		close(released)
	}()
	<-hReached // W's want byte tested, W's grant written
	cancelW()
	if err := <-wDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("W's Acquire: %v, want its context's error", err)
	}
	close(hProceed)
	<-released
	// H handed the lane to W, its only waiter (the grant this test is
	// about). W's settle may already have adopted and released it: the
	// row is not read here.
	if n := h.Stats().Handoffs; n != 1 {
		t.Fatalf("H made %d hand-offs, want 1: to W", n)
	}
	h.setHook(nil)
	acquireWithin(t, x, "another waiter never got the lane granted to a waiter that gave up")
}

// TestForgedGrantsStartOneSettle: grant datagrams that reach no claim
// (forged: the Windows mailslot is writable by everyone) start at most
// one goroutine per lane. The engine's connection is taken meanwhile, so
// that every goroutine they start stays alive to be counted. Before the
// fix each datagram started its own adoption goroutine.
func TestForgedGrantsStartOneSettle(t *testing.T) {
	needDoorbell(t)
	o := newFakeOS()
	path := newDB(t)
	e := o.open(t, path, "cl-target", 0, nil)
	acquireWithin(t, e, "first acquisition") // the lane is known; Linger 0 released it
	conn, err := e.db().Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for range n {
		if !o.send("cl-forger", e.HolderID(), encodeGrant("s", "l", nil)) {
			t.Fatal("a forged grant did not reach the socket")
		}
	}
	eventually(t, "the forged grants to be dispatched", func() bool { return e.bell.granted.Load() == n })
	if got := settleGoroutines(); got != 1 {
		conn.Close()
		t.Fatalf("%d forged grant datagrams left %d goroutines adopting or settling the lane, want 1", n, got)
	}
	conn.Close()
	eventually(t, "the settle to end", func() bool { return settleGoroutines() == 0 })
	if got := activeHolder(t, path); got != "" {
		t.Fatalf("forged grants left the lane with %q", got)
	}
	acquireWithin(t, e, "lane unusable after forged grants")
}

// settleGoroutines counts the goroutines that settle a lane or (before
// the fix) adopt an orphaned grant.
func settleGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "lease.(*laneState).settle(") || strings.Contains(g, "lease.(*laneState).adoptOrphan(") {
			n++
		}
	}
	return n
}

// TestLateGrantAtCloseIsHandedOn: the waiter W gives up while H's
// hand-off to it is in flight, and W's engine closes before that hand-off
// commits. No linger watcher runs once the engine closes, so Close settles
// the lane itself under the write lock, finds the grant committed
// meanwhile and hands it on (or releases it): after Close the row does not
// name W. Before the fix Close's queue cleanup found that grant and
// dropped it, and the row named W after Close — a holder id that the same
// process takes again when it reopens the file (processHolderID), alive
// then to every peer, and unaware.
func TestLateGrantAtCloseIsHandedOn(t *testing.T) {
	needDoorbell(t)
	o := newFakeOS()
	path, h, w, hh, cancelW, wDone := lateGrantSetup(t, o)
	hReached, hProceed := make(chan struct{}), make(chan struct{})
	h.setHook(parkAt("handoff/commit", hReached, hProceed))
	released := make(chan struct{})
	go func() {
		hh.Release()
		close(released)
	}()
	<-hReached
	cancelW()
	if err := <-wDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("W's Acquire: %v, want its context's error", err)
	}
	wReached, wProceed := make(chan struct{}), make(chan struct{})
	w.setHook(parkAt("dequeue", wReached, wProceed))
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	<-wReached // Close leaves the queue: its transaction comes after H's
	close(hProceed)
	<-released
	close(wProceed)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("W's Close did not return")
	}
	if got := activeHolder(t, path); got == w.HolderID() {
		t.Fatal("after W's Close the row still names W")
	}
	h.setHook(nil)
	acquireWithin(t, h, "lane unusable after W closed")
}
