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
// change (issue 28 item 4).
func TestCallersOwnCommitAndBeginAreFenced(t *testing.T) {
	for name, change := range map[string]string{
		"row deleted":          `DELETE FROM _writer_leases`,
		"lease tables dropped": `DROP TABLE _writer_leases; DROP TABLE _writer_queue`,
	} {
		t.Run(name, func(t *testing.T) { testCallersOwnCommitAndBegin(t, change) })
	}
}

func testCallersOwnCommitAndBegin(t *testing.T, change string) {
	path, _ := newFile(t)
	db := openLeased(t, "file:"+path)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
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
