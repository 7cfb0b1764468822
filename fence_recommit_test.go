package cleolease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cleocode/cleolease"
)

// TestCallersOwnCommitAndBeginAreFenced: a caller that runs COMMIT and
// BEGIN itself inside a database/sql transaction starts a second SQLite
// transaction that the fencing check after the driver's BEGIN never saw.
// When the lease row changed in between (here another connection deletes
// it), the commit of that second transaction must fail with ErrLeaseLost
// and write nothing; it used to take the changed row for the
// transaction's own change and commit (found by lease's simulation, see
// TestSimulationRecommitHole). When the other connection drops the lease
// tables instead, the check's read fails ("no such table") and has no data
// version of its own to compare: it used to pass as the transaction's own
// change (issue 28 item 4). A view or table named pragma_data_version,
// in TEMP on the transaction's connection or in main, must not stand in
// for the data version the check compares (issue 38 item 3): it did while
// the check read it from the table-valued pragma_data_version.
func TestCallersOwnCommitAndBeginAreFenced(t *testing.T) {
	const deleted = `DELETE FROM _writer_leases`
	for name, c := range map[string]struct{ before, change string }{
		"row deleted":          {change: deleted},
		"lease tables dropped": {change: `DROP TABLE _writer_leases; DROP TABLE _writer_queue`},
		"row deleted, a TEMP view named pragma_data_version": {
			before: `CREATE TEMP VIEW pragma_data_version AS SELECT 1 AS data_version`, change: deleted},
		"row deleted, a main table named pragma_data_version": {
			before: `CREATE TABLE main.pragma_data_version(data_version INTEGER); INSERT INTO main.pragma_data_version VALUES (1)`,
			change: deleted},
	} {
		t.Run(name, func(t *testing.T) { testCallersOwnCommitAndBegin(t, c.before, c.change) })
	}
}

// testCallersOwnCommitAndBegin runs before on the connection the
// transaction then runs on, and change on another one while the caller's
// own transactions are apart.
func testCallersOwnCommitAndBegin(t *testing.T, before, change string) {
	path, _ := newFile(t)
	db := openLeased(t, "file:"+path)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if before != "" {
		if _, err := conn.ExecContext(ctx, before); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range []string{`UPDATE counter SET n = n + 1`, `COMMIT`} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Another connection of the pool, outside the lease, removes the row
	// (or its tables).
	if _, err := db.ExecContext(cleolease.WithoutLease(ctx), change); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`BEGIN IMMEDIATE`, `UPDATE counter SET n = n + 100`} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); !errors.Is(err, cleolease.ErrLeaseLost) {
		t.Fatalf("commit of the caller's second transaction after another connection's change: %v, want ErrLeaseLost", err)
	}
	var n int
	if err := db.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("counter %d (%v), want 1: only the first transaction's write", n, err)
	}
}
