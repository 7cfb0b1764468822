package lease

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Injected faults (issue 9): chosen lease statements fail with SQLITE_BUSY
// or SQLITE_IOERR k times in a row, through the engine's fault hook
// (Engine.setHook; ops named in immediateOp). Invariants checked on the
// tables and with fenced commits of two processes:
//   - a transient failure never declares a live lease lost before another
//     process could legally reclaim it;
//   - it never leaves two holders able to commit;
//   - it leaves no grant and no queue row behind that nobody will use.

func wantSQLiteCode(t *testing.T, err error, code sqlite3.ErrNo) {
	t.Helper()
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != code {
		t.Fatalf("got %v, want an SQLite error with code %d", err, code)
	}
}

func noLoss(t *testing.T, lost *relLostLog) {
	t.Helper()
	select {
	case why := <-lost.ch:
		t.Fatalf("a lease was declared lost: %s", why)
	default:
	}
}

func TestFaultHeartbeatTransientKeepsLease(t *testing.T) {
	path := newDB(t)
	lost := newLostLog()
	e := openEngine(t, path, func(o *Options) {
		o.TTL = 30 * time.Millisecond // a beat every 10ms
		o.Linger = time.Hour
		o.Logger = slog.New(lost)
	})
	in := newInjector(e)
	db := rawDB(t, path)
	ctx := context.Background()
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	epoch := h.Epoch()
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	for _, c := range []struct {
		op  string
		err error
		k   int
	}{
		{"heartbeat", errBusy, 1},
		{"heartbeat", errIOErr, 1},
		{"heartbeat", errBusy, 8},
		{"heartbeat", errIOErr, 8},
		{"heartbeat/commit", errBusy, 3},
		{"heartbeat/commit", errIOErr, 8},
	} {
		in.fail(c.op, c.err, c.k)
		// k failures, then two more beats: the first succeeded once the
		// second begins (beats run one at a time).
		relRecv(t, in.after(c.op, c.k+2), "the heartbeats")
		if n := in.remaining(c.op); n != 0 {
			t.Fatalf("%s: %d injected failures left", c.op, n)
		}
		noLoss(t, lost)
		if !h.Held() {
			t.Fatalf("%s ×%d: the hold no longer believes it holds", c.op, c.k)
		}
		if err := h.Check(ctx); err != nil {
			t.Fatalf("%s ×%d: Check: %v", c.op, c.k, err)
		}
		relOneActive(t, db, e.HolderID(), epoch) // same epoch after recovery
		if err := fencedWrite(ctx, db, h, "holder"); err != nil {
			t.Fatalf("%s ×%d: fenced commit: %v", c.op, c.k, err)
		}
		if n := queueLen(t, path, "s", "l"); n != 1 {
			t.Fatalf("%s ×%d: %d queue rows; the waiter must still wait", c.op, c.k, n)
		}
	}
	if s := e.Stats(); s.Lost != 0 {
		t.Fatalf("Lost = %d", s.Lost)
	}
	h.Release()
	if got := w.expect("granted"); got != strconv.FormatInt(epoch+1, 10) {
		t.Fatalf("waiter granted epoch %s, want %d", got, epoch+1)
	}
	g := relGrants(t, db)
	if len(g) != 7 || g[6] != "waiter@"+strconv.FormatInt(epoch+1, 10) {
		t.Fatalf("grants %v", g)
	}
}

// With the TTL-steal policy a waiter may legally take the lane once the
// holder's heartbeat is older than its TTL. Both processes read one clock
// file, stepped by TTL/3 by each beat of the holder just before it commits
// (after it wrote heartbeat_at), so the outcome does not depend on
// scheduling: after k failed beats the heartbeat is (k+1)·TTL/3 old until
// the next beat succeeds — exactly the TTL for k = 2, which must not be
// stolen, and stealable from k = 3 on.
func TestFaultHeartbeatStealBoundary(t *testing.T) {
	path := newDB(t)
	ttl := 60 * time.Millisecond
	clock := newFileClock(t, time.Now())
	lost := newLostLog()
	e := openEngine(t, path, func(o *Options) {
		o.TTL = ttl
		o.Linger = time.Hour
		o.StealAfterTTL = true
		o.Clock = clock
		o.Logger = slog.New(lost)
	})
	in := newInjector(e)
	in.observe("heartbeat/commit", func(int) { clock.step(t, ttl/3) })
	db := rawDB(t, path)
	ctx := context.Background()
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	epoch := h.Epoch()
	w := startChild(t, "rel-steal-wait", path, "CLEOLEASE_NAME=thief", "CLEOLEASE_CLOCK="+string(clock))
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })

	// Two failed beats: the heartbeat is at most exactly TTL old.
	in.fail("heartbeat/commit", errIOErr, 2)
	relRecv(t, in.after("heartbeat/commit", 2+3), "the heartbeats")
	noLoss(t, lost)
	relOneActive(t, db, e.HolderID(), epoch)
	if err := fencedWrite(ctx, db, h, "holder"); err != nil {
		t.Fatalf("fenced commit after 2 failed beats: %v", err)
	}

	// Beats fail until the waiter steals: after the third the heartbeat
	// is 4/3 TTL old.
	before := in.count("heartbeat/commit")
	in.fail("heartbeat/commit", errIOErr, -1)
	got := w.expect("granted")
	if ep, rest, _ := strings.Cut(got, " "); rest != "ttl=1 dead=0" || atoiEpoch(ep) <= epoch {
		t.Fatalf("thief says %q, want an epoch above %d (the floor: a reclaim), ttl=1 dead=0", got, epoch)
	}
	if n := in.count("heartbeat/commit") - before; n < 3 {
		t.Fatalf("stolen after %d failed beats, before the heartbeat was more than TTL old", n)
	}
	// The robbed holder may still believe it holds, but cannot commit.
	err = fencedWrite(ctx, db, h, "holder")
	if !errors.Is(err, ErrLost) {
		t.Fatalf("robbed holder's fenced commit: %v, want ErrLost", err)
	}
	// Whichever noticed first — the fenced commit, or a heartbeat that
	// ran between the theft and that commit — the loss is the theft.
	if why := <-lost.ch; !strings.Contains(why, "another holder") && !strings.Contains(why, "re-epoched") {
		t.Fatalf("lost for %q", why)
	}
	in.clear("heartbeat/commit")
	if err := h.Check(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("Check: %v, want ErrLost", err)
	}
	rs := relActive(t, db, "s", "l")
	if len(rs) != 1 || rs[0].holder == e.HolderID() || rs[0].epoch <= epoch {
		t.Fatalf("active rows %+v, want the thief's above epoch %d", rs, epoch)
	}
	h.Release()
	g := relGrants(t, db)
	if len(g) != 2 || g[0] != "holder@"+strconv.FormatInt(epoch, 10) || g[1] != "thief@"+strconv.FormatInt(rs[0].epoch, 10) {
		t.Fatalf("grants %v", g)
	}
}

func TestFaultClaimTransient(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	in := newInjector(e)
	db := rawDB(t, path)
	ctx := context.Background()

	// SQLITE_BUSY is retried inside the claim: one grant, one claim.
	in.fail("claim", errBusy, 5)
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	if in.remaining("claim") != 0 || e.Stats().Claims != 1 {
		t.Fatalf("remaining %d, stats %+v", in.remaining("claim"), e.Stats())
	}
	relOneActive(t, db, e.HolderID(), h.Epoch())
	last := h.Epoch()
	h.Release()

	// SQLITE_IOERR before BEGIN, or after the grant was written but before
	// COMMIT: a typed error, no grant, no queue row, no epoch burnt.
	for _, op := range []string{"claim", "claim/commit"} {
		in.fail(op, errIOErr, 1)
		h, err := e.Acquire(ctx, "s", "l", req)
		var le *Error
		if h != nil || !errors.As(err, &le) {
			t.Fatalf("%s: %v, %v; want no hold and an *Error", op, h, err)
		}
		wantSQLiteCode(t, err, sqlite3.ErrIoErr)
		if rs := relActive(t, db, "s", "l"); len(rs) != 0 {
			t.Fatalf("%s: active rows %+v after a failed claim", op, rs)
		}
		if n := queueLen(t, path, "s", "l"); n != 0 {
			t.Fatalf("%s: %d queue rows after a failed claim", op, n)
		}
		h, err = e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Fatal(err)
		}
		if h.Epoch() <= last {
			t.Fatalf("%s: epoch %d after %d", op, h.Epoch(), last)
		}
		last = h.Epoch()
		h.Release()
	}

	// Enqueueing behind another process's holder fails: nothing is left
	// behind and the holder is not disturbed. A BUSY enqueue is retried.
	holder := startChild(t, "hold", path)
	hep, _ := strconv.ParseInt(holder.expect("held"), 10, 64)
	in.fail("enqueue", errIOErr, 1)
	_, err = e.Acquire(ctx, "s", "l", req)
	wantSQLiteCode(t, err, sqlite3.ErrIoErr)
	if n := queueLen(t, path, "s", "l"); n != 0 {
		t.Fatalf("%d queue rows after a failed enqueue", n)
	}
	in.fail("enqueue", errBusy, 3)
	done := make(chan *Hold, 1)
	go func() {
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Error(err)
		}
		done <- h
	}()
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	holder.send("go")
	holder.expect("commit ok")
	holder.expect("released")
	h = <-done
	if h == nil {
		t.FailNow()
	}
	if h.Epoch() != hep+1 {
		t.Fatalf("epoch %d after the holder's %d", h.Epoch(), hep)
	}
	if err := fencedWrite(ctx, db, h, "waiter"); err != nil {
		t.Fatal(err)
	}
	h.Release()
	if g := relGrants(t, db); len(g) != 2 {
		t.Fatalf("grants %v", g)
	}
}

func TestFaultHandoffTransient(t *testing.T) {
	for _, op := range []string{"handoff", "handoff/commit"} {
		t.Run(strings.ReplaceAll(op, "/", "-"), func(t *testing.T) {
			path := newDB(t)
			e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
			in := newInjector(e)
			db := rawDB(t, path)
			ctx := context.Background()
			h, err := e.Acquire(ctx, "s", "l", req)
			if err != nil {
				t.Fatal(err)
			}
			epoch := h.Epoch()
			w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
			eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
			in.fail(op, errIOErr, 3)
			second := in.after(op, 2)
			if err := fencedWrite(ctx, db, h, "holder"); err != nil {
				t.Fatal(err)
			}
			h.Release()
			relRecv(t, second, "a second hand-off attempt")
			// The first attempt failed and rolled back: the row is still ours.
			rs := relActive(t, db, "s", "l")
			if len(rs) != 1 || (rs[0].holder == e.HolderID()) != (rs[0].epoch == epoch) {
				t.Fatalf("active rows %+v during failing hand-offs", rs)
			}
			if got := w.expect("granted"); got != strconv.FormatInt(epoch+1, 10) {
				t.Fatalf("waiter granted %s, want %d", got, epoch+1)
			}
			if n := in.remaining(op); n != 0 {
				t.Fatalf("%d injected failures left", n)
			}
			if g := relGrants(t, db); len(g) != 2 {
				t.Fatalf("grants %v", g)
			}
			if e.Stats().Lost != 0 {
				t.Fatalf("stats %+v", e.Stats())
			}
		})
	}
}

// An engine whose hand-off keeps failing still frees the lane when it
// closes: the row names a holder whose liveness lock is gone.
func TestFaultHandoffFailsAtClose(t *testing.T) {
	path := newDB(t)
	e, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	in := newInjector(e)
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	epoch := h.Epoch()
	h.Release()
	in.fail("handoff", errIOErr, -1)
	in.fail("handoff/commit", errIOErr, -1)
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	e.Close()
	if got := w.expect("granted"); atoiEpoch(got) <= epoch {
		t.Fatalf("waiter granted %s, want above %d", got, epoch)
	}
}

func TestFaultFenceAndCheckTransient(t *testing.T) {
	for _, steal := range []bool{false, true} { // the fence statement differs
		path := newDB(t)
		lost := newLostLog()
		e := openEngine(t, path, func(o *Options) { o.Logger = slog.New(lost); o.StealAfterTTL = steal })
		in := newInjector(e)
		db := rawDB(t, path)
		ctx := context.Background()
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []error{errBusy, errIOErr} {
			in.fail("fence", f, 1)
			err := fencedWrite(ctx, db, h, "failed")
			wantSQLiteCode(t, err, f.(sqlite3.Error).Code)
			if errors.Is(err, ErrLost) || !h.Held() {
				t.Fatalf("a failed fence was taken for a lost lease: %v", err)
			}
			in.fail("check", f, 1)
			err = h.Check(ctx)
			wantSQLiteCode(t, err, f.(sqlite3.Error).Code)
			if !h.Held() {
				t.Fatal("a failed check was taken for a lost lease")
			}
			if err := h.Check(ctx); err != nil {
				t.Fatal(err)
			}
			if err := fencedWrite(ctx, db, h, "ok"); err != nil {
				t.Fatal(err)
			}
		}
		h.Release()
		noLoss(t, lost)
		var failed, ok int
		db.QueryRow(`SELECT count(*) FILTER (WHERE who = 'failed'), count(*) FILTER (WHERE who = 'ok') FROM grants`).Scan(&failed, &ok)
		if failed != 0 || ok != 2 {
			t.Fatalf("steal=%v: %d writes whose fence failed landed, %d good ones", steal, failed, ok)
		}
	}
}

// A waiter whose context ends leaves the queue even when the first
// attempt to remove its row fails; otherwise the lane would later be
// handed to a process that no longer waits, and stay with it.
func TestFaultDequeueFailsAfterCancel(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	in := newInjector(e)
	holder := startChild(t, "hold", path)
	holder.expect("held")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// Priority 0 puts this waiter's row first in line: were it left
		// behind, the next hand-off would go to it.
		_, err := e.Acquire(ctx, "s", "l", AcquireOptions{Priority: 0, Wait: time.Hour, Require: true})
		done <- err
	}()
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	in.fail("dequeue", errIOErr, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Acquire: %v, want context.Canceled", err)
	}
	if n := queueLen(t, path, "s", "l"); n != 0 {
		t.Errorf("%d queue rows left by a cancelled waiter", n)
	}
	holder.send("go")
	holder.expect("commit ok")
	holder.expect("released")
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=next")
	w.expectWithin("granted", 20*time.Second)
}

// The lane is handed to a waiter at the moment its look at the row fails:
// Acquire reports the failure, and the lane must not stay with a process
// that no longer waits for it.
func TestFaultLookFailsAsLaneArrives(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	in := newInjector(e)
	db := rawDB(t, path)
	holder := startChild(t, "hold", path)
	holder.expect("held")
	done := make(chan error, 1)
	go func() {
		h, err := e.Acquire(context.Background(), "s", "l", req)
		if h != nil {
			h.Release()
		}
		done <- err
	}()
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	in.failWhen("look", errIOErr, 1, func() bool {
		var id string
		db.QueryRow(`SELECT holder_id FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1`).Scan(&id)
		return id == e.HolderID()
	})
	holder.send("go")
	holder.expect("commit ok")
	holder.expect("released")
	// The grant wins over the failed look (Acquire succeeds); what must
	// not happen is an error while the lane stays with this process.
	if err := <-done; err != nil {
		t.Errorf("Acquire: %v", err)
	}
	if in.remaining("look") != 0 {
		t.Skip("the waiter saw the grant before the fault could be injected")
	}
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=next")
	w.expectWithin("granted", 20*time.Second)
}

// A heartbeat that was about to refresh the row when this process handed
// the lane over finds the row re-epoched. That is no loss: the grant was
// given away, not taken; counting it as lost (and logging "lease lost")
// would page an operator for every unlucky hand-off.
func TestFaultHeartbeatRacingHandoffIsNoLoss(t *testing.T) {
	path := newDB(t)
	lost := newLostLog()
	e := openEngine(t, path, func(o *Options) {
		o.TTL = 300 * time.Millisecond // a beat gives up after TTL/3: more than the hand-off takes
		o.Linger = 0
		o.Logger = slog.New(lost)
	})
	in := newInjector(e)
	ctx := context.Background()
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	entered, proceed := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	in.observe("heartbeat", func(int) {
		if armed.CompareAndSwap(true, false) {
			close(entered)
			<-proceed
		}
	})
	relRecv(t, entered, "a heartbeat to start")
	// The beat has read the grant of s/l, the only lane. Release hands it
	// over before it returns.
	h.Release()
	close(proceed)
	if got := w.expect("granted"); got != strconv.FormatInt(h.Epoch()+1, 10) {
		t.Fatalf("waiter granted %s", got)
	}
	// A row on another lane: its first beat comes after the racing one.
	other, err := e.Acquire(ctx, "s", "other", req)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	relRecv(t, in.after("heartbeat", 1), "the next heartbeat")
	noLoss(t, lost)
	if s := e.Stats(); s.Lost != 0 {
		t.Fatalf("Lost = %d after a hand-off", s.Lost)
	}
}
