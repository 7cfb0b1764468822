//go:build unix

package chaos

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
)

// Reproducers of what the ledger's delete-steal phase found: with the
// rollback journal (_journal_mode=DELETE), a reader is refused with
// SQLITE_BUSY while another connection holds the PENDING or EXCLUSIVE lock
// (any writer committing: a peer's transaction, a peer engine's
// bookkeeping). The lease engine's private connection has busy_timeout 0,
// and two of its reads do not retry SQLITE_BUSY, so "database is locked"
// reaches the caller:
//
//   - Lease.Check (Hold.Check: one QueryRowContext of the fencing read on e.db);
//   - cleolease.Status / Engine.Status (readStatus on e.db);
//   - lease.Open's bootstrap (readSchema on e.db before its BEGIN
//     IMMEDIATE), hence the first connection of a cleolease *sql.DB in a
//     process (Connector.Connect → ensureEngine) and the breaker tools. Its
//     connection open (leaseConnector.Connect) retries SQLITE_BUSY until the
//     context ends but then returns the SQLite error, not the context's,
//     and each attempt waits out the DSN's busy_timeout whatever the
//     context (go-sqlite3 runs PRAGMAs that read the schema when it opens).
//
// In WAL mode readers are not blocked by a writer, which is why the WAL
// phases never see it. The other engine reads already treat SQLITE_BUSY as
// transient (await's readActive, the heartbeat, immediate's BEGIN).
//
// Each test holds SQLite's EXCLUSIVE lock on a raw connection during the
// call and gives the call a short deadline: the call may wait and then
// report the context's error, but must not fail with SQLITE_BUSY.

// deleteFile creates a rollback-journal database with the lease tables.
func deleteFile(t *testing.T) (path string, raw *sql.DB) {
	t.Helper()
	path = filepath.Join(testdir.New(t), "delete.db")
	raw, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=DELETE")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec(`CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	eng, err := lease.Open(context.Background(), lease.Options{Base: mattn.For(nil), Path: path, DSN: "file:" + path})
	if err != nil {
		t.Fatal(err)
	}
	eng.Close() // the lease tables exist now
	return path, raw
}

// holdExclusive takes SQLite's EXCLUSIVE lock on raw; the returned func
// (also run at cleanup) drops it.
func holdExclusive(t *testing.T, raw *sql.DB) (unlock func()) {
	t.Helper()
	c, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			c.ExecContext(context.Background(), "ROLLBACK")
			c.Close()
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// leasedDelete opens a cleolease handle on the DELETE-journal file and
// makes sure its engine is open.
func leasedDelete(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("cleolease", "file:"+path+"?_journal_mode=DELETE&_lease_mode=require")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestDeleteJournalCheckIsNotLocked(t *testing.T) {
	path, raw := deleteFile(t)
	db := leasedDelete(t, path)
	l, err := cleolease.AcquireLease(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	unlock := holdExclusive(t, raw) // a peer commits (or its engine does bookkeeping)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = l.Check(ctx)
	unlock()
	if err != nil && classify(ctx, err) == classLocked {
		t.Fatalf("Lease.Check while a peer holds the write lock of a DELETE-journal file: %v (want it to wait: nil, or the context's error)", err)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lease.Check: %v", err)
	}
}

func TestDeleteJournalStatusIsNotLocked(t *testing.T) {
	path, raw := deleteFile(t)
	db := leasedDelete(t, path)
	unlock := holdExclusive(t, raw)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := cleolease.Status(ctx, db)
	unlock()
	if err != nil && classify(ctx, err) == classLocked {
		t.Fatalf("cleolease.Status while a peer holds the write lock of a DELETE-journal file: %v (want it to wait: the lanes, or the context's error)", err)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cleolease.Status: %v", err)
	}
}

func TestDeleteJournalOpenIsNotLocked(t *testing.T) {
	path, raw := deleteFile(t)
	unlock := holdExclusive(t, raw)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// busy_timeout=0 keeps go-sqlite3's own open from blocking past the
	// deadline (it ignores the context while it waits).
	eng, err := lease.Open(ctx, lease.Options{Base: mattn.For(nil), Path: path, DSN: "file:" + path + "?_busy_timeout=0"})
	unlock()
	if err == nil {
		eng.Close()
		return
	}
	if classify(ctx, err) == classLocked {
		t.Fatalf("lease.Open while a peer holds the write lock of a DELETE-journal file: %v (want it to wait: an engine, or the context's error)", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lease.Open: %v", err)
	}
}
