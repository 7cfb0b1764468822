package base_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

// The lease engine over this base in one process: Open bootstraps the
// lease tables, Acquire grants the lane, Check, Status and Inspect see the
// holder, fenced increments on the application's ncruces connections
// commit, and none of the engine's connections runs the application's
// Init callback (the Base carries it: the application's connections do).
func TestEngineOverNcruces(t *testing.T) {
	ctx := context.Background()
	p := newDB(t)
	var inits atomic.Int64
	init := func(*sqlite3.Conn) error { inits.Add(1); return nil }
	b := base.For(&base.Callbacks{Init: init})
	e, err := lease.Open(ctx, lease.Options{Base: b, Path: p,
		DSN: "file:" + p + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	open := true
	t.Cleanup(func() {
		if open {
			e.Close()
		}
	})

	h, err := e.Acquire(ctx, "s", "l", lease.AcquireOptions{Wait: time.Minute, Require: true})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Held() || h.Degraded() || h.Epoch() <= 0 {
		t.Fatalf("hold: held %v, degraded %v, epoch %d", h.Held(), h.Degraded(), h.Epoch())
	}
	if err := h.Check(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(how string, lanes []lease.LaneStatus, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if len(lanes) != 1 || lanes[0].Scope != "s" || lanes[0].Lane != "l" || lanes[0].Epoch != h.Epoch() {
			t.Fatalf("%s: %+v, want lane s/l at epoch %d", how, lanes, h.Epoch())
		}
		if hs := lanes[0].Holder; hs == nil || hs.ID != e.HolderID() || !hs.Alive || hs.Epoch != h.Epoch() {
			t.Fatalf("%s: holder %+v, want %s alive at epoch %d", how, hs, e.HolderID(), h.Epoch())
		}
	}
	lanes, err := e.Status(ctx)
	check("Status", lanes, err)
	lanes, err = lease.Inspect(ctx, b, p, "", nil)
	check("Inspect", lanes, err)
	h.Release()
	if h.Held() {
		t.Fatal("held after Release")
	}
	if got := inits.Load(); got != 0 {
		t.Fatalf("the engine's connections ran the application's Init %d times, want none", got)
	}

	// The application's connections: the Base's, which run Init, one at a
	// time.
	db := openBase(t, b, dsnOf(p))
	db.SetMaxOpenConns(1)
	marker := filepath.Join(filepath.Dir(p), "held")
	const n = 5
	for i := 0; i < n; i++ {
		if err := basetest.Increment(ctx, e, db, "me", marker); err != nil {
			t.Fatalf("increment %d: %v", i, err)
		}
	}
	if _, err := basetest.Verify(ctx, db, n); err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); s.Grants != n+1 || s.Fenced != 0 || s.Lost != 0 {
		t.Fatalf("stats %+v: want %d grants, none fenced or lost", s, n+1)
	}
	if got := inits.Load(); got != 1 {
		t.Fatalf("Init ran %d times, want once: on the application's one connection, never the engine's", got)
	}

	// Once every connection is closed the file is quiet (no -wal): Inspect
	// reads it through an immutable connection and creates no side file.
	db.Close()
	open = false
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	quiet := func(when string) {
		t.Helper()
		for _, f := range []string{p + "-wal", p + "-shm", p + "-journal"} {
			if _, err := os.Lstat(f); err == nil {
				t.Fatalf("%s: %s exists", when, f)
			}
		}
	}
	quiet("after the last close")
	lanes, err = lease.Inspect(ctx, b, p, "", nil)
	if err != nil || len(lanes) != 2 {
		t.Fatalf("Inspect of the quiet file: %+v, %v; want two lanes", lanes, err)
	}
	for _, l := range lanes {
		if l.Holder != nil || (l.Scope == "s" && l.Epoch != h.Epoch()) {
			t.Fatalf("Inspect of the quiet file: %+v; want every lane free, s/l at epoch %d", lanes, h.Epoch())
		}
	}
	quiet("after Inspect")
}
