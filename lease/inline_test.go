package lease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/busy"
)

// rawInline is an InlineConfirmer on a go-sqlite3 connection whose
// busy_timeout is 0 (see inlineConn).
type rawInline struct{ rawConfirmer }

func (r rawInline) TryBeginImmediate(ctx context.Context) (bool, error) {
	_, err := r.c.ExecContext(ctx, "BEGIN IMMEDIATE", nil)
	if err != nil && busy.Is(err) {
		return false, nil
	}
	return err == nil, err
}

// inlineFile returns a file whose lane s/l has a released row (an
// engine acquired and released it) and a pool of one go-sqlite3
// connection on it with busy_timeout 0, with that connection as an
// InlineConfirmer.
func inlineFile(t *testing.T) (path string, db *sql.DB, c *sql.Conn, cf rawInline) {
	t.Helper()
	path = newDB(t)
	first := openEngine(t, path, nil)
	h, err := first.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	first.Close()
	db, err = sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	c, err = db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Raw(func(dc any) error {
		cf = rawInline{rawConfirmer{dc.(*sqlite3.SQLiteConn)}}
		return nil
	})
	return path, db, c, cf
}

// laneRow reads s/l's newest row on q: holder, epoch, active.
func laneRow(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (holder string, epoch int64, active bool) {
	t.Helper()
	if err := q.QueryRowContext(context.Background(), `SELECT coalesce(holder_id, ''), epoch, active FROM _writer_leases
		WHERE scope = 's' AND lane = 'l' ORDER BY epoch DESC LIMIT 1`).Scan(&holder, &epoch, &active); err != nil {
		t.Fatal(err)
	}
	return holder, epoch, active
}

// inlineWrite runs one fenced write under h inside the transaction its
// inline claim opened on cf, ending it the way the driver's commit does.
func inlineWrite(t *testing.T, c *sql.Conn, cf rawInline, h *Hold) {
	t.Helper()
	ctx := context.Background()
	f, lost, err := h.FenceBegin(ctx, cf)
	if err != nil || lost {
		t.Fatalf("FenceBegin: lost %v, %v", lost, err)
	}
	if _, err := c.ExecContext(ctx, `UPDATE counter SET n = n + 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, cf, true); err != nil {
		t.Fatal(err)
	}
	if err := f.EndInline(ctx, cf, true, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	f.Committed()
}

// TestInlineClaimIsTheCallersOneTransaction: a process whose one write
// finds its lane free claims it inside that write's own transaction — the
// grant invisible to every other connection until the COMMIT — and
// releases it in the same COMMIT: the lane is free again afterwards, at a
// higher epoch, and the process never opened the engine's connection,
// never started listening, and wrote no lease transaction of its own,
// not even at Close.
func TestInlineClaimIsTheCallersOneTransaction(t *testing.T) {
	path, _, c, cf := inlineFile(t)
	other := rawDB(t, path)
	_, before, _ := laneRow(t, other)
	e := openEngine(t, path, func(o *Options) { o.TablesReady = true })
	ctx := context.Background()

	h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Minute, Require: true, Confirm: cf})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Inline() || !h.Begun() {
		t.Fatalf("Inline %v, Begun %v; want a grant claimed inside the caller's transaction", h.Inline(), h.Begun())
	}
	if holder, epoch, active := laneRow(t, c); holder != e.holderID || epoch != h.Epoch() || !active || epoch <= before {
		t.Fatalf("inside the transaction the row is (%q, %d, active %v); want (%q, %d > %d, active)", holder, epoch, active, e.holderID, h.Epoch(), before)
	}
	if holder, epoch, active := laneRow(t, other); active || epoch != before {
		t.Fatalf("another connection sees (%q, %d, active %v) before the COMMIT; want the released row of epoch %d", holder, epoch, active, before)
	}
	inlineWrite(t, c, cf, h)
	h.Release()

	if _, epoch, active := laneRow(t, other); active || epoch != h.Epoch() {
		t.Fatalf("after the COMMIT the row is (epoch %d, active %v); want released at epoch %d", epoch, active, h.Epoch())
	}
	var n int
	if err := other.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("counter %d, %v; want the write committed", n, err)
	}
	st := e.Stats()
	if st.InlineClaims != 1 || st.Claims != 1 || st.LeaseWrites != 0 {
		t.Fatalf("InlineClaims %d, Claims %d, LeaseWrites %d; want 1, 1, 0", st.InlineClaims, st.Claims, st.LeaseWrites)
	}
	e.Close()
	if n := e.conn.changes.Load(); n != 0 {
		t.Errorf("the engine's connection opened or closed %d times; want never", n)
	}
	if e.listening.Load() {
		t.Error("the engine started listening for a grant nobody could see")
	}
}

// TestInlineClaimKeptForTheNextWrite: a grant claimed inline is kept,
// committed as the row this process holds, when more of its work
// follows — a writer queued at the gate, or, as here, a previous hold of
// the lane that ended within Linger — and the process then listens and
// serves its next writer from the row (a fast grant).
func TestInlineClaimKeptForTheNextWrite(t *testing.T) {
	path, _, c, cf := inlineFile(t)
	other := rawDB(t, path)
	e := openEngine(t, path, func(o *Options) { o.TablesReady = true; o.Linger = time.Hour })
	ctx := context.Background()
	opts := AcquireOptions{Wait: time.Minute, Require: true, Confirm: cf}
	for i := 0; i < 2; i++ {
		h, err := e.Acquire(ctx, "s", "l", opts)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Inline() {
			t.Fatalf("write %d: not claimed inline", i+1)
		}
		inlineWrite(t, c, cf, h)
		h.Release()
		holder, epoch, active := laneRow(t, other)
		if kept := i == 1; active != kept || (kept && (holder != e.holderID || epoch != h.Epoch())) {
			t.Fatalf("after write %d the row is (%q, %d, active %v); want kept %v at epoch %d", i+1, holder, epoch, active, kept, h.Epoch())
		}
	}
	if !e.listening.Load() {
		t.Fatal("a process that holds a row is not listening")
	}
	h, err := e.Acquire(ctx, "s", "l", opts)
	if err != nil {
		t.Fatal(err)
	}
	if h.Inline() || h.Begun() || e.Stats().FastGrants != 1 {
		t.Fatalf("third write: Inline %v, Begun %v, FastGrants %d; want the kept row reused", h.Inline(), h.Begun(), e.Stats().FastGrants)
	}
	h.Release()
	e.Close()
	if _, _, active := laneRow(t, other); active {
		t.Fatal("Close left the kept row active")
	}
}

// TestInlineClaimStepsAside: a lane another process holds, or one with a
// queue row, is never claimed inline: the caller's transaction the try
// opened is rolled back before Acquire takes the lane the usual way.
func TestInlineClaimStepsAside(t *testing.T) {
	for _, tc := range []struct{ name, sql string }{
		{"held", `UPDATE _writer_leases SET active = 1, holder_id = 'cl-gone', holder_pid = 2147483000, reentrancy_depth = 1
			WHERE scope = 's' AND lane = 'l'`},
		{"queued", `INSERT INTO _writer_queue(scope, lane, holder_id, priority, enqueued_at, deadline_at, holder_pid)
			VALUES ('s', 'l', 'cl-gone', 0, 0, 0, 2147483000)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _, c, cf := inlineFile(t)
			if _, err := rawDB(t, path).Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			e := openEngine(t, path, func(o *Options) { o.TablesReady = true })
			// The made-up holder is dead on the Linux tier and reclaimed; on
			// the portable tier its liveness cannot be told and the wait
			// ends unavailable. Either way the lane is not claimed inline.
			h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Wait: 200 * time.Millisecond, Require: true, Confirm: cf})
			if err != nil && !errors.Is(err, ErrUnavailable) {
				t.Fatal(err)
			}
			begun := false
			if h != nil {
				defer h.Release()
				if h.Inline() {
					t.Fatal("claimed inline")
				}
				begun = h.Begun()
			}
			if e.Stats().InlineClaims != 0 {
				t.Fatal("claimed inline")
			}
			auto := true
			c.Raw(func(dc any) error { auto = dc.(*sqlite3.SQLiteConn).AutoCommit(); return nil })
			if !begun && !auto {
				t.Fatal("the inline try left the caller's transaction open")
			}
		})
	}
}

// TestInlineClaimEndsWithItsTransaction: an inline grant whose
// transaction rolls back goes with it (the lane stays free, at the epoch
// it had); one whose transaction the caller's own SQL committed, so that
// the driver's commit finds it no longer open, is the row this process
// holds, released as any other.
func TestInlineClaimEndsWithItsTransaction(t *testing.T) {
	ctx := context.Background()
	t.Run("rollback", func(t *testing.T) {
		path, _, c, cf := inlineFile(t)
		other := rawDB(t, path)
		_, before, _ := laneRow(t, other)
		e := openEngine(t, path, func(o *Options) { o.TablesReady = true })
		h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Minute, Require: true, Confirm: cf})
		if err != nil || !h.Inline() {
			t.Fatalf("not claimed inline: %v", err)
		}
		if _, err := c.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		h.Release()
		if holder, epoch, active := laneRow(t, other); active || epoch != before {
			t.Fatalf("the row is (%q, %d, active %v); want the released row of epoch %d", holder, epoch, active, before)
		}
		if e.lane("s", "l").currentRow() != nil {
			t.Fatal("the engine holds a row its transaction rolled back")
		}
	})
	t.Run("committed by the caller", func(t *testing.T) {
		path, _, c, cf := inlineFile(t)
		other := rawDB(t, path)
		e := openEngine(t, path, func(o *Options) { o.TablesReady = true; o.Linger = time.Hour })
		h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Minute, Require: true, Confirm: cf})
		if err != nil || !h.Inline() {
			t.Fatalf("not claimed inline: %v", err)
		}
		f, _, err := h.FenceBegin(ctx, cf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil { // the caller's SQL
			t.Fatal(err)
		}
		if err := f.Check(ctx, cf, false); err != nil {
			t.Fatal(err)
		}
		if err := f.EndInline(ctx, cf, false, true); err != nil {
			t.Fatal(err)
		}
		h.Release()
		if holder, epoch, active := laneRow(t, other); !active || holder != e.holderID || epoch != h.Epoch() {
			t.Fatalf("the row is (%q, %d, active %v); want this process's at epoch %d", holder, epoch, active, h.Epoch())
		}
		if e.lane("s", "l").currentRow() == nil || !e.listening.Load() {
			t.Fatal("the committed grant is not the row this process holds, or it does not listen")
		}
		e.Close()
		if _, _, active := laneRow(t, other); active {
			t.Fatal("Close left the row active")
		}
	})
}

var _ driver.QueryerContext = rawInline{}

// TestInlineGrantExposedByTheCallersCommitListensFirst: the caller's own
// COMMIT inside a transaction whose grant was claimed inline makes the
// row visible before EndInline. Hold.Exposing, which the driver calls for
// such a statement, starts the engine's listening first: a waiter that
// rang it before would have been refused, and would have taken the row
// for one its engine does not hold (reclaimable).
func TestInlineGrantExposedByTheCallersCommitListensFirst(t *testing.T) {
	path, _, c, cf := inlineFile(t)
	e := openEngine(t, path, func(o *Options) { o.TablesReady = true })
	ctx := context.Background()
	h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Minute, Require: true, Confirm: cf})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if !h.Inline() || e.listening.Load() {
		t.Fatalf("Inline %v, listening %v; want an inline grant of an engine that does not listen", h.Inline(), e.listening.Load())
	}
	h.Exposing()
	if !e.listening.Load() {
		t.Fatal("not listening after Exposing: the caller's COMMIT would show a row naming a process that refuses registrations")
	}
	inlineWrite(t, c, cf, h)
}
