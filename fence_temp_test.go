package cleolease_test

import (
	"context"
	"testing"

	"github.com/cleocode/cleolease"
)

// TestTempTableDoesNotHideTheLeaseTables: SQLite resolves an unqualified
// table name in the temp schema first, so a TEMP table named
// _writer_leases on the caller's connection (a copy of the real one, say)
// would answer the fencing reads in place of the file's own table. Every
// statement of the engine names main., so the fence reads the file: a
// write made after another holder took the lane in main._writer_leases
// finds the lease lost and claims the lane again before it commits
// (issue 28 item 5: it committed under the old epoch, while the file's
// row named the other holder).
func TestTempTableDoesNotHideTheLeaseTables(t *testing.T) {
	path, raw := newFile(t)
	db := openLeased(t, "file:"+path+"?_lease_linger=1h")
	db.SetMaxOpenConns(1) // the TEMP tables live on the one connection that writes
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `UPDATE counter SET n = n + 1`); err != nil {
		t.Fatal(err)
	}
	// Copies of the lease tables as they are now, in the temp schema of
	// the writing connection.
	if _, err := db.ExecContext(cleolease.WithoutLease(ctx), `CREATE TEMP TABLE _writer_leases AS SELECT * FROM main._writer_leases;
		CREATE TEMP TABLE _writer_queue AS SELECT * FROM main._writer_queue`); err != nil {
		t.Fatal(err)
	}
	// Another holder takes the lane in the file (as a reclaim or a break
	// and a claim would).
	// Its process is gone (no such pid, no liveness slot): the write's
	// claim reclaims the lane from it.
	if _, err := raw.Exec(`UPDATE _writer_leases SET holder_id = 'cl-another', holder_pid = 4000000, holder_start = NULL, holder_slot = NULL,
		epoch = epoch + 1 WHERE active = 1`); err != nil {
		t.Fatal(err)
	}
	// The write must find the lane lost (the file's row names another
	// holder) and claim it again before it commits: the holder named there
	// is not alive (its id has no liveness lock), so the claim reclaims it
	// at a higher epoch.
	if _, err := db.ExecContext(ctx, `UPDATE counter SET n = n + 100`); err != nil {
		t.Fatal(err)
	}
	var who string
	if err := raw.QueryRow(`SELECT holder_id FROM _writer_leases WHERE active = 1`).Scan(&who); err != nil {
		t.Fatal(err)
	}
	if who == "cl-another" {
		t.Fatal("the write committed while the file's lease row named another holder: the fence read the TEMP copy")
	}
	if n := count(t, raw, `SELECT count(*) FROM _writer_queue`); n != 0 {
		t.Fatalf("%d queue rows left", n)
	}
}
