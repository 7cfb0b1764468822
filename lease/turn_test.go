package lease

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"
)

// The turn predicts a returning writer from the last gap between a
// release and the next arrival, waits the grace for it after a kept
// turn, and stops predicting once a writer did not come back.
func TestTurnPredictsAReturningWriter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tr := turn{grace: 250 * time.Microsecond}
	tr.arrive(at(0), false)
	if tr.keep(false) || !tr.keep(true) {
		t.Fatalf("first arrival: keep(false)=%v keep(true)=%v; want only queued work to keep the turn", tr.keep(false), tr.keep(true))
	}
	tr.release(at(time.Millisecond), false)
	if g := tr.graceLeft(at(time.Millisecond)); g != 0 {
		t.Fatalf("a release that did not keep the turn waits %v for the writer", g)
	}
	tr.arrive(at(time.Millisecond+100*time.Microsecond), false)
	if !tr.keep(false) {
		t.Fatal("a writer back 100 µs after its release is not expected back")
	}
	tr.release(at(2*time.Millisecond), true)
	if g := tr.graceLeft(at(2*time.Millisecond + 100*time.Microsecond)); g != 150*time.Microsecond {
		t.Fatalf("grace left 100 µs after a kept release: %v, want 150µs", g)
	}
	if g := tr.graceLeft(at(3 * time.Millisecond)); g != 0 {
		t.Fatalf("grace left after it ended: %v", g)
	}
	tr.arrive(at(2*time.Millisecond+50*time.Microsecond), false)
	if g := tr.graceLeft(at(2*time.Millisecond + 60*time.Microsecond)); g != 0 || !tr.keep(false) {
		t.Fatalf("after the writer came back: grace %v, keep %v; want no grace and the turn kept", g, tr.keep(false))
	}
	tr.release(at(3*time.Millisecond), true)
	tr.missed()
	if tr.keep(false) || tr.graceLeft(at(3*time.Millisecond)) != 0 {
		t.Fatal("a writer that did not come back is still expected")
	}
	tr.arrive(at(10*time.Millisecond), false)
	if tr.keep(false) {
		t.Fatal("an arrival 7 ms after the release is taken for a returning writer")
	}
	tr.arrive(at(20*time.Millisecond), true)
	if !tr.keep(false) {
		t.Fatal("an arrival while the gate is owned (work of this process queued behind work) does not keep the turn")
	}
}

// turnWithWaiter holds lane s/l in a new engine with the given slice and
// no linger, has a waiter of another process register with it, and makes
// the lane expect its writer back (as after a writer that came straight
// back) with the given grace to do so. It returns the engine, a raw
// handle on the file, the Hold and the waiter.
func turnWithWaiter(t *testing.T, slice, grace time.Duration) (*Engine, *sql.DB, *Hold, *child) {
	t.Helper()
	needDoorbell(t)
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger, o.Slice = 0, slice })
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	w := startChild(t, "pass-confirm-wait", path, "CLEOLEASE_NAME=waiter")
	waitRegistered(t, e, 1)
	expectBack(e, grace)
	return e, rawDB(t, path), h, w
}

// expectBack makes lane s/l of e expect its writer back and gives it
// grace to do so.
func expectBack(e *Engine, grace time.Duration) {
	l := e.lane("s", "l")
	l.mu.Lock()
	l.held.turn.returns, l.held.turn.grace = true, grace
	l.mu.Unlock()
}

// TestTurnKeptForAReturningWriter: inside its slice, a process whose
// writer comes straight back keeps the lane although another process
// waits — its commit writes no grant, its release no hand-off, and the
// writer's next Acquire is granted at once on the same row; the commit
// that ends the slice carries the grant.
func TestTurnKeptForAReturningWriter(t *testing.T) {
	e, db, h1, w := turnWithWaiter(t, time.Hour, time.Hour) // the watcher never gives up on the writer here
	epoch := h1.Epoch()
	before := e.Stats()
	keptTx(t, db, h1, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")")
	h1.Release()
	h2, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if h2.Epoch() != epoch || st.FastGrants != before.FastGrants+1 || st.LeaseWrites != before.LeaseWrites || st.Handoffs != before.Handoffs {
		t.Fatalf("the returning writer got epoch %d (want %d), stats %+v (before %+v): want the row kept for it, no lease write", h2.Epoch(), epoch, st, before)
	}
	e.opts.Slice = 0 // the slice ends (only this goroutine reads it)
	passTx(t, db, h2, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	h2.Release()
	expectGranted(t, w, epoch+1, 0)
	if after := e.Stats(); after.LeaseWrites != before.LeaseWrites || after.PassedInCommit != 1 || after.Handoffs != 1 {
		t.Fatalf("stats %+v after %+v: want the one hand-off inside the commit that ended the slice", after, before)
	}
}

// TestTurnHandsOffWhenTheWriterDoesNotReturn: a turn kept for a writer
// that does not come back ends after the grace: the watcher hands the
// lane to the waiting process, and the lane stops expecting the writer,
// so its next turn hands over inside the commit again.
func TestTurnHandsOffWhenTheWriterDoesNotReturn(t *testing.T) {
	e, db, h, w := turnWithWaiter(t, time.Hour, returnGrace)
	epoch := h.Epoch()
	before := e.Stats()
	keptTx(t, db, h, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")")
	h.Release()
	expectGranted(t, w, epoch+1, 0)
	if st := e.Stats(); st.Handoffs != before.Handoffs+1 || st.PassedInCommit != before.PassedInCommit {
		t.Fatalf("stats %+v (before %+v): want one hand-off by the watcher", st, before)
	}
	l := e.lane("s", "l")
	l.mu.Lock()
	expected := l.held.turn.keep(false)
	l.mu.Unlock()
	if expected {
		t.Fatal("the lane still expects the writer that did not come back")
	}
}

// TestTurnKeepsTwoCommitsPastTheSlice: a commit that takes longer than
// the slice (a replicated commit on LiteFS) does not end the turn by
// itself: a writer that comes straight back gets minTurnCommits commits
// before the grant is written, inside the second commit.
func TestTurnKeepsTwoCommitsPastTheSlice(t *testing.T) {
	e, db, h1, w := turnWithWaiter(t, time.Nanosecond, time.Hour)
	epoch := h1.Epoch()
	keptTx(t, db, h1, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")")
	h1.Release()
	h2, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	if h2.Epoch() != epoch {
		t.Fatalf("the returning writer got epoch %d, want %d (the row kept for it)", h2.Epoch(), epoch)
	}
	passTx(t, db, h2, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	h2.Release()
	expectGranted(t, w, epoch+1, 0)
}
