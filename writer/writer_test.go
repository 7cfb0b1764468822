package writer_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/writer"
)

// open opens a cleolease database (the go-sqlite3 base) in a new
// directory.
func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("cleolease", "file:"+filepath.Join(testdir.New(t), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	return db
}

// The context and the functions of package writer work on a database
// opened through a base's cleolease driver: a lane named with
// writer.WithLane is the lane a write and a held lease take.
func TestSharedAPIOnABaseDriver(t *testing.T) {
	db := open(t)
	ctx := writer.WithLane(context.Background(), "jobs", "ingest")
	err := writer.WithWriterLease(ctx, db, func(ctx context.Context, l *writer.Lease) error {
		if l.Epoch() <= 0 || !l.Held() {
			t.Errorf("held lease: epoch %d, held %v", l.Epoch(), l.Held())
		}
		_, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	lanes, err := writer.Status(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range lanes {
		found = found || l.Scope == "jobs" && l.Lane == "ingest" && l.Epoch >= 1
	}
	if !found {
		t.Fatalf("Status after a write on jobs/ingest names no such lane: %+v", lanes)
	}
	st, err := writer.Stats(context.Background(), db)
	if err != nil || st.Grants == 0 {
		t.Fatalf("Stats: %+v, %v; want a grant counted", st, err)
	}
	if _, err := writer.AcquireLease(writer.WithoutLease(context.Background()), db); !errors.Is(err, writer.ErrNoLease) {
		t.Fatalf("AcquireLease with WithoutLease: %v, want ErrNoLease", err)
	}
}

// A database opened with another driver is not cleolease's.
func TestNotCleolease(t *testing.T) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(testdir.New(t), "plain.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := writer.Stats(context.Background(), db); !errors.Is(err, writer.ErrNotCleolease) {
		t.Fatalf("Stats on a go-sqlite3 database: %v, want ErrNotCleolease", err)
	}
}

// Package cleolease's names are writer's: the same error values and, by
// alias, the same types, so errors.Is and errors.As match across them.
func TestRootNamesAreWriters(t *testing.T) {
	for _, pair := range [][2]error{
		{cleolease.ErrLeaseUnavailable, writer.ErrLeaseUnavailable},
		{cleolease.ErrLeaseLost, writer.ErrLeaseLost},
		{cleolease.ErrNoLease, writer.ErrNoLease},
		{cleolease.ErrNotCleolease, writer.ErrNotCleolease},
		{cleolease.ErrReplica, writer.ErrReplica},
		{cleolease.ErrNetworkFS, writer.ErrNetworkFS},
		{cleolease.ErrExclusiveLocking, writer.ErrExclusiveLocking},
		{cleolease.ErrLockingConflict, writer.ErrLockingConflict},
		{writer.ErrLockingConflict, lease.ErrLockingConflict},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%v is not writer's %v", pair[0], pair[1])
		}
	}
	var dsnErr *writer.DSNError
	if _, err := cleolease.ParseDSN("file:x.db?_lease_bogus=1"); !errors.As(err, &dsnErr) || dsnErr.Param != "_lease_bogus" {
		t.Fatalf("ParseDSN of an unknown parameter: %v, want a *writer.DSNError naming it", err)
	}
	var le *cleolease.LeaseError = &writer.LeaseError{Op: "claim"}
	if !errors.As(error(le), new(*writer.LeaseError)) {
		t.Fatal("a *cleolease.LeaseError is not a *writer.LeaseError")
	}
}
