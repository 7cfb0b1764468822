package cleolease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
)

// Tests of the README's "Differences from go-sqlite3" that the differential
// suite cannot compare call by call: each states what cleolease does
// instead, and why it must.

// sql.Conn.Raw hands the callback a cleolease.Conn, not the
// *sqlite3.SQLiteConn itself (database/sql passes whatever the driver's
// Connect returned, and that must be the intercepting connection);
// SQLiteConn() reaches the native one.
func TestDifferenceRawHandsAConn(t *testing.T) {
	_, cl := openTwins(t, "")
	c, err := cl.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		if _, ok := dc.(*sqlite3.SQLiteConn); ok {
			t.Error("Raw handed the native connection: the README's difference is out of date")
		}
		cc, ok := dc.(cleolease.Conn)
		if !ok || cc.SQLiteConn() == nil {
			t.Fatalf("Raw handed %T, want a cleolease.Conn with its SQLiteConn", dc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The lease's tables live in the database file (the fencing check must be
// in the same SQLite transaction as the data): a schema listing shows them.
func TestDifferenceLeaseTablesInTheFile(t *testing.T) {
	_, cl := openTwins(t, "")
	var n int
	if err := cl.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('_writer_leases', '_writer_queue')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("lease tables in sqlite_master = %d, %v; want 2", n, err)
	}
}

// An authorizer registered on a connection is also asked about the
// driver's own statements on it (BEGIN IMMEDIATE, the fencing read of
// _writer_leases, COMMIT): one that denies them makes leased writes fail
// with SQLITE_AUTH, where go-sqlite3's autocommit write passes.
func TestDifferenceAuthorizerSeesDriverStatements(t *testing.T) {
	_, cl := openTwins(t, "")
	ctx := context.Background()
	if _, err := cl.Exec(diffSchema); err != nil {
		t.Fatal(err)
	}
	c, err := cl.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Raw(func(dc any) error {
		dc.(cleolease.Conn).SQLiteConn().RegisterAuthorizer(func(op int, _, _, _ string) int {
			if op == sqlite3.SQLITE_TRANSACTION {
				return sqlite3.SQLITE_DENY
			}
			return sqlite3.SQLITE_OK
		})
		return nil
	})
	_, err = c.ExecContext(ctx, "INSERT INTO t(a) VALUES (1)")
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrAuth {
		t.Fatalf("leased write under an authorizer denying transactions = %v, want SQLITE_AUTH", err)
	}
}

// Leaving WAL mode needs every other connection to the file closed; the
// lease engine keeps its own connection open, so the switch fails with
// SQLITE_BUSY. With _lease_mode=off (no engine) it works as in go-sqlite3.
func TestDifferenceLeavingWALMode(t *testing.T) {
	_, cl := openTwins(t, "")
	var mode string
	err := cl.QueryRow("PRAGMA journal_mode = DELETE").Scan(&mode)
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrBusy {
		t.Fatalf("PRAGMA journal_mode = DELETE = %q, %v; want SQLITE_BUSY", mode, err)
	}
	_, off := openTwins(t, "?_lease_mode=off")
	if err := off.QueryRow("PRAGMA journal_mode = DELETE").Scan(&mode); err != nil || mode != "delete" {
		t.Fatalf("with _lease_mode=off: %q, %v; want delete", mode, err)
	}
}

// PRAGMA data_version moves when another connection commits; the lease
// engine's bookkeeping (its claim and, after the linger, its release of the
// lane) is such a commit, so a connection's own leased write is followed by
// a change of its data_version. (go-sqlite3: unchanged.)
func TestDifferenceDataVersionMovesAfterOwnWrite(t *testing.T) {
	_, cl := openTwins(t, "?_lease_linger=1ms")
	c, err := cl.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	version := func() int64 {
		var v int64
		if err := c.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	if _, err := c.ExecContext(context.Background(), "CREATE TABLE x(a); INSERT INTO x VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "data_version moves after the engine releases the lane", func() bool { return version() != before })
}

// Under the opt-in _lease_steal_after_ttl the fencing check also refreshes
// the lease row's heartbeat inside the caller's transaction (so a long
// transaction is not taken for a hung one): SQL's changes() then counts that
// row. RowsAffected, taken before the commit, is the caller's.
func TestDifferenceStealFenceTouchesTheLeaseRow(t *testing.T) {
	_, cl := openTwins(t, "?_lease_steal_after_ttl=true")
	cl.SetMaxOpenConns(1)
	if _, err := cl.Exec(diffSchema); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Exec("INSERT INTO t(a) VALUES (1),(2),(3)")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Fatalf("RowsAffected = %d, want 3", n)
	}
	var changes int64
	if err := cl.QueryRow("SELECT changes()").Scan(&changes); err != nil || changes != 1 {
		t.Fatalf("changes() = %d, %v; want 1 (the lease row the fence refreshed)", changes, err)
	}
}
