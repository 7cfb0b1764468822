package base_test

import (
	"context"
	"testing"
)

// The statements cleolease's core runs for itself (BEGIN IMMEDIATE,
// COMMIT, …) keep last_insert_rowid() as the application's INSERT left it,
// as ncruces's own transactions do; the application's other statements
// zero it first, as ncruces's ExecContext does. Before, an autocommit
// INSERT's fenced COMMIT zeroed it: `INSERT …; SELECT … WHERE id =
// last_insert_rowid()` found nothing (ncruces's Example_customTime, run
// through cleolease by internal/ncrucessuite).
func TestConnOwnStatementsKeepLastInsertRowid(t *testing.T) {
	ctx := context.Background()
	c, db := twins(t)
	execNoArgs(t, c, "BEGIN IMMEDIATE")
	execNoArgs(t, c, "INSERT INTO t(a) VALUES (1)")
	execNoArgs(t, c, "COMMIT")
	if id := queryValue(t, c, "SELECT last_insert_rowid()"); id != int64(1) {
		t.Errorf("after BEGIN IMMEDIATE, INSERT, COMMIT: last_insert_rowid() = %v, want 1", id)
	}
	for _, q := range []string{"BEGIN", "PRAGMA query_only = 1", "PRAGMA query_only = 0", "ROLLBACK", "PRAGMA busy_timeout = 0", "PRAGMA busy_timeout = 30000"} {
		execNoArgs(t, c, q)
		if id := queryValue(t, c, "SELECT last_insert_rowid()"); id != int64(1) {
			t.Errorf("after %s: last_insert_rowid() = %v, want 1", q, id)
		}
	}

	// ncruces alone: its transactions keep it, its Exec of another
	// statement zeroes it.
	nc := conn(t, db)
	tx, err := nc.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO t(a) VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var ncID int64
	if err := nc.QueryRowContext(ctx, "SELECT last_insert_rowid()").Scan(&ncID); err != nil || ncID != 2 {
		t.Errorf("ncruces alone, after its transaction: last_insert_rowid() = %d, %v, want 2", ncID, err)
	}
	if _, err := nc.ExecContext(ctx, "UPDATE t SET c = 1"); err != nil {
		t.Fatal(err)
	}
	if err := nc.QueryRowContext(ctx, "SELECT last_insert_rowid()").Scan(&ncID); err != nil || ncID != 0 {
		t.Errorf("ncruces alone, after an UPDATE: last_insert_rowid() = %d, %v, want 0", ncID, err)
	}
	execNoArgs(t, c, "UPDATE t SET c = 1")
	if id := queryValue(t, c, "SELECT last_insert_rowid()"); id != int64(0) {
		t.Errorf("after an UPDATE: last_insert_rowid() = %v, want 0 (ncruces's)", id)
	}
}
