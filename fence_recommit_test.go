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
// TestSimulationRecommitHole).
func TestCallersOwnCommitAndBeginAreFenced(t *testing.T) {
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
	// Another connection of the pool, outside the lease, removes the row.
	if _, err := db.ExecContext(cleolease.WithoutLease(ctx), `DELETE FROM _writer_leases`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`BEGIN IMMEDIATE`, `UPDATE counter SET n = n + 100`} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); !errors.Is(err, cleolease.ErrLeaseLost) {
		t.Fatalf("commit of the caller's second transaction after the row was deleted: %v, want ErrLeaseLost", err)
	}
	var n int
	if err := db.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("counter %d (%v), want 1: only the first transaction's write", n, err)
	}
}
