package cleolease_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// TestPrivateDatabaseTakesNoLease: a private database opens as with
// go-sqlite3 (pocket-id's tests open file:<name>?mode=memory with one
// pooled connection): no lease engine, no lease tables in it, and the lease
// API answers ErrNoLease, as for _lease_mode=off; a DSN parameter that a
// file would be refused for (exclusive locking) is accepted. A shared one
// keeps the in-process lease.
func TestPrivateDatabaseTakesNoLease(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	t.Chdir(dir)
	for _, dsn := range []string{"", ":memory:", "file::memory:", "file:pocket?mode=memory", "file:pocket?mode=memory&_locking_mode=EXCLUSIVE&_lease_mode=require"} {
		db, err := sql.Open("cleolease", dsn)
		if err != nil {
			t.Fatalf("sql.Open(%q): %v", dsn, err)
		}
		db.SetMaxOpenConns(1)
		if _, err := db.ExecContext(ctx, `CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users(name) VALUES ('a')`); err != nil {
			t.Fatalf("%q: %v", dsn, err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name LIKE '\_writer%' ESCAPE '\'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%q: %d lease tables (%v); want none", dsn, n, err)
		}
		if _, err := cleolease.AcquireLease(ctx, db); !errors.Is(err, cleolease.ErrNoLease) {
			t.Errorf("%q: AcquireLease = %v; want ErrNoLease", dsn, err)
		}
		if _, err := cleolease.Stats(ctx, db); !errors.Is(err, cleolease.ErrNoLease) {
			t.Errorf("%q: Stats = %v; want ErrNoLease", dsn, err)
		}
		if _, err := cleolease.Status(ctx, db); !errors.Is(err, cleolease.ErrNoLease) {
			t.Errorf("%q: Status = %v; want ErrNoLease", dsn, err)
		}
		if _, err := cleolease.Break(ctx, db, "main", "default", true); !errors.Is(err, cleolease.ErrNoLease) {
			t.Errorf("%q: Break = %v; want ErrNoLease", dsn, err)
		}
		if err := cleolease.WithWriterLease(ctx, db, func(context.Context, *cleolease.Lease) error { return nil }); !errors.Is(err, cleolease.ErrNoLease) {
			t.Errorf("%q: WithWriterLease = %v; want ErrNoLease", dsn, err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("%q: Close: %v", dsn, err)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("the private databases left files in the working directory: %v (%v)", ents, err)
	}

	shared, err := sql.Open("cleolease", "file:pocket-shared?mode=memory&cache=shared")
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	if _, err := shared.ExecContext(ctx, `CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	if st, err := cleolease.Stats(ctx, shared); err != nil || st.Grants == 0 {
		t.Errorf("shared memory: Stats = %+v, %v; want the write's grant counted", st, err)
	}
}
