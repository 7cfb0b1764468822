package lease

import (
	"context"
	"database/sql/driver"
	"testing"
)

// onRawConn runs fn on the driver connection of a plain go-sqlite3
// connection of path, opened with a busy timeout of 30 s.
func onRawConn(t *testing.T, path string, fn func(dc driver.Conn)) {
	t.Helper()
	c, err := rawDB(t, path).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error { fn(dc.(driver.Conn)); return nil }); err != nil {
		t.Fatal(err)
	}
}

// busyTimeout reads dc's busy timeout (ms).
func busyTimeout(t *testing.T, dc driver.Conn) int64 {
	t.Helper()
	rows, err := dc.(driver.QueryerContext).QueryContext(context.Background(), "PRAGMA busy_timeout", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		t.Fatal(err)
	}
	return v[0].(int64)
}

// TestLoanSparesTheEnginesConnection: an engine whose own connection is
// not open yet (Options.TablesReady) runs its first claim — and the sweep
// before it — on a connection lent for the Acquire, and, lent the
// application's last connection, releases the lingering row on it
// (ReleaseIdle): a process that writes once and closes never opens the
// engine's connection, and Close has nothing left to write. The lent
// connection's busy timeout is its own again after Return.
func TestLoanSparesTheEnginesConnection(t *testing.T) {
	e, path := openLate(t)
	var h *Hold
	onRawConn(t, path, func(dc driver.Conn) {
		ctx, loan := Lend(context.Background(), dc)
		var err error
		h, err = e.Acquire(ctx, "s", "l", req)
		if rerr := loan.Return(); rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := busyTimeout(t, dc); got != 30000 {
			t.Fatalf("busy timeout %d ms after the loan; want the connection's own 30000", got)
		}
	})
	h.Release() // the row lingers (Linger 50 ms in openEngine; long enough for what follows to race it, not to matter)
	if gen, _ := e.conn.pin(); gen != 0 {
		t.Fatalf("the engine opened its own connection for the first claim (%d opens and closes)", gen)
	}
	onRawConn(t, path, func(dc driver.Conn) {
		ctx, loan := Lend(context.Background(), dc)
		e.ReleaseIdle(ctx)
		if err := loan.Return(); err != nil {
			t.Fatal(err)
		}
	})
	if rs := relActive(t, rawDB(t, path), "s", "l"); len(rs) != 0 {
		t.Fatalf("active rows %+v after ReleaseIdle; want none", rs)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if gen, _ := e.conn.pin(); gen != 0 {
		t.Fatalf("the engine opened its own connection (%d opens and closes); want none", gen)
	}
}

// TestReturnedLoanIsNotUsed: after Return the engine never touches the
// lent connection again, even with the context that carried it: it
// opens its own.
func TestReturnedLoanIsNotUsed(t *testing.T) {
	e, path := openLate(t)
	onRawConn(t, path, func(dc driver.Conn) {
		ctx, loan := Lend(context.Background(), dc)
		if err := loan.Return(); err != nil {
			t.Fatal(err)
		}
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
		if got := busyTimeout(t, dc); got != 30000 {
			t.Fatalf("busy timeout %d ms; want 30000 (the loan was returned before any use)", got)
		}
	})
	if gen, open := e.conn.pin(); gen != 1 || !open {
		t.Fatalf("the engine has opened %d connections (one open: %v); want its own, once", gen, open)
	}
}

// TestReturnWaitsForTheStatementsInProgress: while the engine runs a
// statement sequence on the lent connection it holds the loan, which
// Return takes first (so Return waits for the sequence to end); one begun
// after Return runs on the engine's own connection.
func TestReturnWaitsForTheStatementsInProgress(t *testing.T) {
	e, path := openLate(t)
	onRawConn(t, path, func(dc driver.Conn) {
		ctx, loan := Lend(context.Background(), dc)
		c, done, err := e.opConn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if loan.mu.TryLock() {
			t.Fatal("the loan is free while the engine uses the lent connection: Return would not wait")
		}
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM counter`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		done()
		if err := loan.Return(); err != nil {
			t.Fatal(err)
		}
		if gen, _ := e.conn.pin(); gen != 0 {
			t.Fatalf("the engine's own connection opened during the loan (%d)", gen)
		}
		_, done2, err := e.opConn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done2()
		if gen, open := e.conn.pin(); gen != 1 || !open {
			t.Fatalf("after Return the engine has opened %d connections (one open: %v); want its own", gen, open)
		}
	})
}
