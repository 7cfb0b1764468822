package lease

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/mattn/go-sqlite3"
)

// backupFile writes a copy of the database at path beside it (VACUUM
// INTO) and returns its path.
func backupFile(t *testing.T, path string) string {
	t.Helper()
	out := filepath.Join(filepath.Dir(path), "backup.db")
	if _, err := rawDB(t, path).Exec(`VACUUM INTO ?`, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// restoreFile copies the database at src over the one at dst in place,
// with SQLite's backup API (the inode is kept), taking no lease.
func restoreFile(t *testing.T, src, dst string) {
	t.Helper()
	ctx := context.Background()
	conn := func(p string) *sql.Conn {
		c, err := rawDB(t, p).Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	sc, dc := conn(src), conn(dst)
	err := dc.Raw(func(d any) error {
		return sc.Raw(func(s any) error {
			var err error
			eventually(t, "the backup API to copy the backup over the file", func() bool {
				var bk *sqlite3.SQLiteBackup
				bk, err = d.(*sqlite3.SQLiteConn).Backup("main", s.(*sqlite3.SQLiteConn), "main")
				if err != nil {
					return !restoreBusy(err)
				}
				var done bool
				done, err = bk.Step(-1)
				if ferr := bk.Finish(); err == nil {
					err = ferr
				}
				return done || (err != nil && !restoreBusy(err))
			})
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func restoreBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// highestEpoch is the highest epoch of the lease rows of the file at path.
func highestEpoch(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	if err := rawDB(t, path).QueryRow(`SELECT coalesce(max(epoch), 0) FROM _writer_leases`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRestoredRowOfAnEarlierEngine: holder ids are per process, so a
// restored row may name this process although the engine that held it is
// gone. A new engine of the file releases such rows when it opens, and a
// claim of it never takes one as handed to it; an engine that never used
// the lane releases the row when a waiter of another process registers
// with it, so that the waiter is not left behind a live process that will
// never hand the lane on. Epochs granted after the restore exceed every
// epoch issued before it.
func TestRestoredRowOfAnEarlierEngine(t *testing.T) {
	needDoorbell(t)
	ctx := context.Background()
	path := newDB(t)
	opts := Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: time.Hour}
	open := func() *Engine {
		e, err := Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e1 := open()
	h, err := e1.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	backup := backupFile(t, path) // the row names this process, active
	h.Release()
	e1.Close()

	// A new engine of this process on the restored file.
	issued := highestEpoch(t, path)
	restoreFile(t, backup, path)
	e2 := open()
	h, err = e2.Acquire(ctx, "s", "l", req)
	if err != nil {
		e2.Close()
		t.Fatal(err)
	}
	if h.Epoch() <= issued {
		t.Errorf("new engine granted epoch %d, the restored row's? (the file had issued up to %d)", h.Epoch(), issued)
	}
	h.Release()
	e2.Close()

	// Restored under an engine that never used the lane: a waiter of
	// another process is granted it.
	e3 := open()
	defer e3.Close()
	issued = highestEpoch(t, path)
	restoreFile(t, backup, path)
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
	db := rawDB(t, path)
	eventually(t, "the waiter to write under the lane", func() bool {
		var n int
		return db.QueryRow(`SELECT count(*) FROM grants WHERE who = 'waiter'`).Scan(&n) == nil && n == 1
	})
	got, err := strconv.ParseInt(w.expect("granted"), 10, 64)
	if err != nil || got <= issued {
		t.Fatalf("waiter granted %d (%v), want above %d", got, err, issued)
	}
}

// TestRestoredRowOfANonListeningProcess: a restore brings back a row that
// names this process while its engine of the file does not listen (it
// opened with TablesReady, as the driver's does when the lease tables
// are complete, and has used no lease since: a process that only reads).
// The process holds its liveness lock, so a waiter of another process
// finds the row's holder alive; its doorbell refuses the waiter's
// registration, which proves that its engine here holds no grant (nothing
// names a process before it listens), and the waiter takes the lane at
// once, at an epoch above every epoch issued before the restore (issue 38
// item 2; it waited its whole Wait bound before).
func TestRestoredRowOfANonListeningProcess(t *testing.T) {
	needDoorbell(t)
	if !platform.KeepsLocks {
		t.Skip("this platform keeps no liveness locks: the row's holder is judged by its pid")
	}
	ctx := context.Background()
	path := newDB(t)
	opts := Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: time.Hour}
	e1, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e1.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	backup := backupFile(t, path) // the row names this process, active
	h.Release()
	e1.Close()

	opts.TablesReady = true
	if !platform.RefusesUnbound {
		// Where a doorbell that is not bound is not refused (a socket
		// file or a mailslot that is missing proves nothing), the row
		// waits for the reader's next lease use: it then listens, and its
		// heartbeat (every TTL/3) releases the row.
		opts.TTL = 600 * time.Millisecond
	}
	reader, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if reader.listening.Load() {
		t.Fatal("the reader's engine listens: the test would prove nothing")
	}
	issued := highestEpoch(t, path)
	restoreFile(t, backup, path)
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter", "CLEOLEASE_WAIT=10s")
	if !platform.RefusesUnbound {
		h, err := reader.Acquire(ctx, "s", "other", req) // the reader's next lease use
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
	}
	got, err := strconv.ParseInt(w.expect("granted"), 10, 64)
	if err != nil || got <= issued {
		t.Fatalf("waiter granted %d (%v), want above %d", got, err, issued)
	}
	if platform.RefusesUnbound && reader.listening.Load() {
		t.Fatal("the reader's engine began to listen: the waiter was served by it, not by the refusal")
	}
}
