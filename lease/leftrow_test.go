package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Close whose hand-off fails (the write lock not free within its bound:
// injected here) leaves the lane's row naming this process. When the
// process opens the file again with TablesReady — what the driver passes
// whenever the lease tables are complete — the new engine neither listens
// nor sweeps until its first lease use, and holds the liveness lock again,
// so nobody may reclaim the row and a waiter's registration is refused:
// the waiter waited its whole Wait bound (issue 38 item 2), even when the
// reopened process only reads. The reopen now sweeps the row at Open.
func TestRowLeftAtCloseIsSweptAtReopen(t *testing.T) {
	path := newDB(t)
	open := func(tablesReady bool) *Engine {
		e, err := Open(context.Background(), Options{Base: testBase, Path: path, TablesReady: tablesReady,
			DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e1 := open(false)
	h, err := e1.Acquire(context.Background(), "s", "l", AcquireOptions{Require: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Release() // the row lingers (Linger: an hour)
	injected := errors.New("injected: the write lock is taken")
	e1.setHook(func(op string) error {
		if op == "handoff" {
			return injected
		}
		return nil
	})
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM _writer_leases WHERE active = 1 AND holder_id = ?`, processHolderID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows naming this process after the failed Close: %d (%v), want 1", n, err)
	}
	e2 := open(true) // and only reads from here on
	defer e2.Close()
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=w", "CLEOLEASE_WAIT=20s")
	if got := w.expect(""); len(got) < 7 || got[:7] != "granted" {
		t.Fatalf("a waiter of the row left at close: %q, want granted", got)
	}
}
