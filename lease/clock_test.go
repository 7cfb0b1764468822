package lease

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"
)

// Clock (issue 9): every lease time that reaches a row — acquired_at,
// heartbeat_at, enqueued_at, deadline_at — and every decision taken from
// rows — aging in the queue, the opt-in TTL steal — comes from
// Options.Clock. Liveness itself never rests on wall-clock time: a holder
// is dead when its liveness lock is gone (or its pid or start time say so),
// so without StealAfterTTL no clock step, forward or back, on any process
// can rob a live holder or keep a dead one.
//
// With StealAfterTTL the steal compares the waiter's clock with the
// heartbeat_at the holder wrote with its own clock. That is what the
// policy promises and all it can promise: the clocks of the processes must
// agree to within the TTL minus a heartbeat period (TTL/3). A forward step
// of a waiter's clock, or a backward step of the holder's, by more than
// that makes a live holder look hung, and the waiter takes the lane; the
// robbed holder is fenced (its next fenced commit fails with ErrLost,
// Check says ErrLost) and never commits after the thief's grant. A
// backward step of the waiter's clock, or a forward step of the holder's,
// delays a TTL steal of a hung holder by the step. Dead holders are
// reclaimed at once whatever the clocks say.

func TestClockRowsUseInjectedClock(t *testing.T) {
	path := newDB(t)
	t0 := time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)
	clk := newRelClock(t0)
	e := openEngine(t, path, func(o *Options) {
		o.TTL = 30 * time.Millisecond
		o.Linger = 0
		o.Clock = clk
		o.StealAfterTTL = true // its fence refreshes heartbeat_at
	})
	in := newInjector(e)
	db := rawDB(t, path)
	ctx := context.Background()
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	if r := relOneActive(t, db, e.HolderID(), h.Epoch()); r.acquired != ms(0) || r.heartbeat != ms(0) || r.ttl != 30 {
		t.Fatalf("row %+v, want acquired_at = heartbeat_at = %d, ttl 30", r, ms(0))
	}
	clk.step(5 * time.Second)
	relRecv(t, in.after("heartbeat", 2), "a heartbeat after the step")
	if r := relOneActive(t, db, e.HolderID(), h.Epoch()); r.acquired != ms(0) || r.heartbeat != ms(5*time.Second) {
		t.Fatalf("row %+v after a heartbeat, want heartbeat_at %d", r, ms(5*time.Second))
	}
	st, err := e.Status(ctx)
	if err != nil || len(st) != 1 || st[0].Holder == nil || st[0].Holder.HeldFor != 5*time.Second {
		t.Fatalf("status %+v, %v; want held for 5s by the engine's clock", st, err)
	}
	in.fail("heartbeat", errIOErr, -1) // keep beats out of the way
	clk.step(time.Second)
	if err := fencedWrite(ctx, db, h, "w"); err != nil {
		t.Fatal(err)
	}
	if r := relOneActive(t, db, e.HolderID(), h.Epoch()); r.heartbeat != ms(6*time.Second) {
		t.Fatalf("fence refresh wrote heartbeat_at %d, want %d", r.heartbeat, ms(6*time.Second))
	}
	clk.step(time.Second)
	h.Release()
	var hb int64
	if err := db.QueryRow(`SELECT heartbeat_at FROM _writer_leases WHERE epoch = ?`, h.Epoch()).Scan(&hb); err != nil || hb != ms(7*time.Second) {
		t.Fatalf("released row heartbeat_at %d, %v; want %d", hb, err, ms(7*time.Second))
	}

	// A queue row is stamped by an injected clock: this waiter's, or the
	// holder's if the holder writes it on the waiter's behalf.
	t1 := time.Date(2003, 1, 1, 0, 0, 0, 0, time.UTC)
	holder := startChild(t, "rel-hold", path, "CLEOLEASE_CLOCK="+string(newFileClock(t, t1)))
	holder.expect("held")
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.Acquire(qctx, "s", "l", req)
		done <- err
	}()
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	var enq, deadline, ttl int64
	if err := db.QueryRow(`SELECT enqueued_at, deadline_at, ttl_ms FROM _writer_queue WHERE holder_id = ?`, e.HolderID()).Scan(&enq, &deadline, &ttl); err != nil {
		t.Fatal(err)
	}
	if (enq != ms(7*time.Second) && enq != t1.UnixMilli()) || deadline != enq+ttl || ttl != 30 {
		t.Fatalf("queue row enqueued_at %d deadline_at %d ttl %d; want enqueued_at %d (ours) or %d (holder's), deadline = enqueued + 30",
			enq, deadline, ttl, ms(7*time.Second), t1.UnixMilli())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// Without StealAfterTTL, clock steps on the holder's side or the waiter's
// side change what rows say and nothing else.
func TestClockStepsNeverRobOrKeep(t *testing.T) {
	path := newDB(t)
	db := rawDB(t, path)
	ctx := context.Background()
	clk := newRelClock(time.Now())
	lost := newLostLog()
	e := openEngine(t, path, func(o *Options) {
		o.TTL = 30 * time.Millisecond
		o.Linger = 0
		o.Clock = clk
		o.Logger = slog.New(lost)
	})
	in := newInjector(e)

	// This process holds; its clock jumps by hours both ways.
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	epoch := h.Epoch()
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	for _, d := range []time.Duration{time.Hour, -2 * time.Hour, 25 * time.Hour, -48 * time.Hour} {
		clk.step(d)
		relRecv(t, in.after("heartbeat", 2), "heartbeats after the step")
		if r := relOneActive(t, db, e.HolderID(), epoch); r.heartbeat != clk.Now().UnixMilli() {
			t.Fatalf("step %s: heartbeat_at %d, want %d", d, r.heartbeat, clk.Now().UnixMilli())
		}
		if err := fencedWrite(ctx, db, h, "holder"); err != nil {
			t.Fatalf("step %s: %v", d, err)
		}
	}
	h.Release()
	if got := w.expect("granted"); got != strconv.FormatInt(epoch+1, 10) {
		t.Fatalf("waiter granted %s, want %d", got, epoch+1)
	}

	// Another process holds; this waiter's clock jumps by hours both ways
	// while it looks at the row. The holder is not robbed.
	holder := startChild(t, "hold", path)
	hep, _ := strconv.ParseInt(holder.expect("held"), 10, 64)
	type res struct {
		h   *Hold
		err error
	}
	done := make(chan res, 1)
	go func() {
		h, err := e.Acquire(ctx, "s", "l", req)
		done <- res{h, err}
	}()
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	for _, d := range []time.Duration{time.Hour, -3 * time.Hour, 100 * time.Hour} {
		clk.step(d)
		relRecv(t, in.after("look", 2), "looks at the row after the step")
	}
	holder.send("go")
	if got := holder.expect("commit"); got != "ok" {
		t.Fatalf("the live holder was robbed: commit %s", got)
	}
	r := <-done
	if r.err != nil || r.h.Epoch() != hep+1 {
		t.Fatalf("grant %v, %v; want epoch %d", r.h, r.err, hep+1)
	}
	r.h.Release()

	// A dead holder is reclaimed at once, whatever this waiter's clock says
	// of its heartbeat (here: an hour in the future).
	clk.set(time.Now().Add(-time.Hour))
	holder = startChild(t, "hold", path)
	hep, _ = strconv.ParseInt(holder.expect("held"), 10, 64)
	go func() {
		h, err := e.Acquire(ctx, "s", "l", req)
		done <- res{h, err}
	}()
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	holder.Cmd.Process.Kill()
	r = <-done
	if r.err != nil || r.h.Epoch() != hep+1 {
		t.Fatalf("grant %v, %v; want epoch %d", r.h, r.err, hep+1)
	}
	r.h.Release()
	if s := e.Stats(); s.ReclaimTTL != 0 || s.ReclaimDead != 1 || s.Lost != 0 {
		var why []string
		for len(lost.ch) > 0 {
			why = append(why, <-lost.ch)
		}
		t.Fatalf("stats %+v (lost: %q): want one dead-holder reclaim, no TTL reclaim, nothing lost", s, why)
	}
	if g := relGrants(t, db); len(g) != 6 || g[4] != "waiter@"+strconv.FormatInt(epoch+1, 10) {
		t.Fatalf("grants %v", g)
	}
}

// What StealAfterTTL promises under clock steps (see the comment at the top).
func TestClockStepsUnderStealAfterTTL(t *testing.T) {
	ctx := context.Background()
	type res struct {
		h   *Hold
		err error
	}

	t.Run("waiter forward step", func(t *testing.T) {
		path := newDB(t)
		db := rawDB(t, path)
		// The holder's clock stands at t0 (its heartbeat_at; TTL 1h, so it
		// beats every 20 minutes of real time: never during the test).
		t0 := time.Now()
		clk := newRelClock(t0)
		e := openEngine(t, path, func(o *Options) { o.Linger = 0; o.StealAfterTTL = true; o.Clock = clk })
		in := newInjector(e)
		holder := startChild(t, "rel-hold", path, "CLEOLEASE_CLOCK="+string(newFileClock(t, t0)))
		hep, _ := strconv.ParseInt(holder.expect("held"), 10, 64)
		done := make(chan res, 1)
		go func() {
			h, err := e.Acquire(ctx, "s", "l", req)
			done <- res{h, err}
		}()
		eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
		// A step of exactly the TTL: the heartbeat is TTL old, not older.
		clk.step(time.Hour)
		relRecv(t, in.after("look", 2), "looks at the row")
		select {
		case r := <-done:
			t.Fatalf("granted after a step of exactly the TTL: %v, %v", r.h, r.err)
		default:
		}
		// One millisecond more: the live holder's heartbeat looks stale.
		clk.step(time.Millisecond)
		r := <-done
		if r.err != nil || r.h.Epoch() <= hep || e.Stats().ReclaimTTL != 1 {
			t.Fatalf("grant %v, %v, %+v; want a TTL steal above epoch %d", r.h, r.err, e.Stats(), hep)
		}
		if err := fencedWrite(ctx, db, r.h, "thief"); err != nil {
			t.Fatal(err)
		}
		holder.send("go")
		if got := holder.expect("commit"); got == "ok" {
			t.Fatal("the robbed holder committed after the thief's grant")
		}
		r.h.Release()
		if g := relGrants(t, db); len(g) != 1 || g[0] != "thief@"+strconv.FormatInt(r.h.Epoch(), 10) {
			t.Fatalf("grants %v", g)
		}
	})

	t.Run("holder backward step", func(t *testing.T) {
		path := newDB(t)
		db := rawDB(t, path)
		now := time.Now()
		clk := newRelClock(now)
		e := openEngine(t, path, func(o *Options) {
			o.TTL = 60 * time.Millisecond
			o.Linger = time.Hour
			o.StealAfterTTL = true
			o.Clock = clk
		})
		in := newInjector(e)
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Fatal(err)
		}
		// The waiter's clock stands still at now: while this holder's
		// does too, its heartbeat is never old, however long the test.
		w := startChild(t, "rel-steal-wait", path, "CLEOLEASE_NAME=thief", "CLEOLEASE_CLOCK="+string(newFileClock(t, now)))
		eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
		relRecv(t, in.after("heartbeat", 3), "heartbeats")
		if err := fencedWrite(ctx, db, h, "holder"); err != nil {
			t.Fatal(err)
		}
		clk.step(-time.Hour)
		if got := w.expect("granted"); got != strconv.FormatInt(h.Epoch()+1, 10)+" ttl=1 dead=0" {
			t.Fatalf("thief says %q", got)
		}
		if err := fencedWrite(ctx, db, h, "holder"); !errors.Is(err, ErrLost) {
			t.Fatalf("robbed holder's fenced commit: %v, want ErrLost", err)
		}
		h.Release()
		if g := relGrants(t, db); len(g) != 2 || g[1] != "thief@"+strconv.FormatInt(h.Epoch()+1, 10) {
			t.Fatalf("grants %v", g)
		}
	})

	t.Run("dead holder with a future heartbeat", func(t *testing.T) {
		path := newDB(t)
		clk := newRelClock(time.Now())
		e := openEngine(t, path, func(o *Options) { o.Linger = 0; o.StealAfterTTL = true; o.Clock = clk })
		// The holder's clock is a day ahead: its heartbeat_at lies in this
		// waiter's future, so the TTL would never call it stale.
		holder := startChild(t, "rel-hold", path, "CLEOLEASE_CLOCK="+string(newFileClock(t, time.Now().Add(24*time.Hour))))
		hep, _ := strconv.ParseInt(holder.expect("held"), 10, 64)
		done := make(chan res, 1)
		go func() {
			h, err := e.Acquire(ctx, "s", "l", req)
			done <- res{h, err}
		}()
		eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
		holder.Cmd.Process.Kill()
		r := <-done
		if r.err != nil || r.h.Epoch() != hep+1 {
			t.Fatalf("grant %v, %v; want epoch %d", r.h, r.err, hep+1)
		}
		r.h.Release()
		if s := e.Stats(); s.ReclaimDead != 1 || s.ReclaimTTL != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// Aging orders the queue by how long each waiter waited according to the
// clock of the process that decides (the one handing the lane over).
func TestClockAgingUsesInjectedClock(t *testing.T) {
	for _, c := range []struct {
		name string
		step time.Duration
		want string
	}{
		{"aged", 0, "a100,b50"},                        // a100 waited 60s: 600 points of aging
		{"clock back an hour", -time.Hour, "b50,a100"}, // nobody waited: plain priority
	} {
		t.Run(c.name, func(t *testing.T) {
			path := newDB(t)
			db := rawDB(t, path)
			clk := newRelClock(time.Now())
			e := openEngine(t, path, func(o *Options) { o.Linger = 0; o.Clock = clk })
			h, err := e.Acquire(context.Background(), "s", "l", req)
			if err != nil {
				t.Fatal(err)
			}
			a := startChild(t, "wait", path, "CLEOLEASE_NAME=a100", "CLEOLEASE_PRIO=100")
			eventually(t, "a100 to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
			b := startChild(t, "wait", path, "CLEOLEASE_NAME=b50", "CLEOLEASE_PRIO=50")
			eventually(t, "b50 to queue", func() bool { return queueLen(t, path, "s", "l") == 2 })
			now := clk.Now().UnixMilli()
			if _, err := db.Exec(`UPDATE _writer_queue SET enqueued_at = ? WHERE priority = 100`, now-60000); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`UPDATE _writer_queue SET enqueued_at = ? WHERE priority = 50`, now); err != nil {
				t.Fatal(err)
			}
			clk.step(c.step)
			h.Release()
			a.expect("granted")
			b.expect("granted")
			var order string
			db.QueryRow(`SELECT group_concat(who, ',') FROM (SELECT who FROM grants ORDER BY id)`).Scan(&order)
			if order != c.want {
				t.Fatalf("grant order %s, want %s", order, c.want)
			}
		})
	}
}
