package cleolease_test

import (
	"context"
	"testing"
)

// With _lease_linger=0 the lane's row is released after each write, so
// every later write finds its lane free and claims it inside its own
// transaction (lease.InlineConfirmer). A transaction the caller's SQL, or
// SQLite, has already ended then commits nothing, and Commit returns
// SQLite's own error, as go-sqlite3's does — not a lost lease.

func TestInlineCommitAfterManualRollback(t *testing.T) {
	runDifferentialDSN(t, "?_lease_linger=0", []dop{
		seq("exec", "INSERT INTO t(a) VALUES (1)"),
		seq("exec", "INSERT INTO t(a) VALUES (2)"),
		seq("begin", ""),
		seq("exec", "INSERT INTO t(a) VALUES (3)"),
		seq("exec", "ROLLBACK"),
		seq("commit", ""),
		seq("exec", "INSERT INTO t(a) VALUES (4)"),
	})
}

func TestInlineCommitAfterManualRollbackAndBegin(t *testing.T) {
	runDifferentialDSN(t, "?_lease_linger=0", []dop{
		seq("exec", "INSERT INTO t(a) VALUES (1)"),
		seq("exec", "INSERT INTO t(a) VALUES (2)"),
		seq("begin", ""),
		seq("exec", "INSERT INTO t(a) VALUES (3)"),
		seq("exec", "ROLLBACK"),
		seq("exec", "BEGIN"),
		seq("exec", "INSERT INTO t(a) VALUES (4)"),
		seq("commit", ""),
		seq("query", "SELECT a FROM t ORDER BY a"),
	})
}

// SQLite itself ends the transaction (the ROLLBACK conflict rule).
func TestInlineCommitAfterOrRollback(t *testing.T) {
	runDifferentialDSN(t, "?_lease_linger=0", []dop{
		seq("exec", "INSERT INTO t(a) VALUES (1)"),
		seq("exec", "INSERT INTO t(a) VALUES (2)"),
		seq("begin", ""),
		seq("exec", "INSERT OR ROLLBACK INTO t(a) VALUES (1)"),
		seq("commit", ""),
		seq("exec", "INSERT INTO t(a) VALUES (5)"),
	})
}

// TestDifferenceInlineClaimCountsInChanges: a write whose lane was free
// claims it with one UPDATE of _writer_leases right after its BEGIN
// IMMEDIATE, so SQL's changes() read as the transaction's first statement
// is 1 (go-sqlite3: the count of the connection's previous write), and the
// claim and its release count in total_changes().
func TestDifferenceInlineClaimCountsInChanges(t *testing.T) {
	_, cl := openTwins(t, "?_lease_linger=0")
	ctx := context.Background()
	if _, err := cl.Exec(diffSchema); err != nil {
		t.Fatal(err)
	}
	cl.SetMaxOpenConns(1)
	if _, err := cl.Exec("INSERT INTO t(a) VALUES (1),(2),(3)"); err != nil {
		t.Fatal(err)
	}
	tx, err := cl.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var changes int
	if err := tx.QueryRow("SELECT changes()").Scan(&changes); err != nil || changes != 1 {
		t.Fatalf("changes() = %d, %v; want 1 (the lease claim)", changes, err)
	}
}
