package cleolease_test

// Reliability under replaced, deleted, read-only and full files, and
// leaks after Close (issue 9). The injected-fault, clock and fuzz tests of
// the lease engine are in lease/faults_test.go, lease/clock_test.go and
// lease/fuzz_test.go.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// relWrite inserts v into items through db; it reports whether the write
// was acknowledged (committed).
func relWrite(ctx context.Context, db *sql.DB, v string) error {
	_, err := db.ExecContext(ctx, `INSERT INTO items(v) VALUES (?)`, v)
	return err
}

// relTxWrite inserts v in an explicit transaction.
func relTxWrite(ctx context.Context, db *sql.DB, v string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO items(v) VALUES (?)`, v); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// relItems returns the values in items of the database file at path,
// after checking its integrity (read-only, raw go-sqlite3).
// relQueryRow reads one row of query from the file at path, read-only,
// into dest.
func relQueryRow(t *testing.T, path, query string, dest ...any) error {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.QueryRow(query).Scan(dest...)
}

func relItems(t *testing.T, path string) map[string]bool {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check of %s: %q, %v", path, ok, err)
	}
	rows, err := db.Query(`SELECT v FROM items`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var v string
		rows.Scan(&v)
		out[v] = true
	}
	return out
}

func relWantAll(t *testing.T, got map[string]bool, acked []string) {
	t.Helper()
	for _, v := range acked {
		if !got[v] {
			t.Fatalf("acknowledged write %q is missing (%d of %d present)", v, len(got), len(acked))
		}
	}
}

// relLeaseRows counts the lease rows of the database file at path (-1 when
// it has no lease tables).
func relLeaseRows(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM _writer_leases`).Scan(&n); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return -1
		}
		t.Fatal(err)
	}
	return n
}

// relReunite copies the original database (the inode kept at keep) and
// the WAL its connections wrote (still named after path) into a fresh
// directory, as one recovers a file deleted or renamed over while in use,
// and returns the copy's path.
func relReunite(t *testing.T, keep, path string) string {
	t.Helper()
	dir := testdir.New(t)
	out := filepath.Join(dir, "orig.db")
	for src, dst := range map[string]string{keep: out, path + "-wal": out + "-wal"} {
		b, err := os.ReadFile(src)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The database file is renamed over or deleted while a process has it open.
//
// What cleolease promises: the stale engine refuses every write path with
// ErrFileChanged (at once when no row lingers; once inotify reports the
// change when one does — writes it let through meanwhile went to the
// original file, on which its lease and connections are), the original
// file keeps every acknowledged write, and the stale engine never takes or
// uses a lease on the file now at the path.
//
// What SQLite does underneath, in WAL mode: the connections of the stale
// process keep writing the WAL under the old name (path-wal), and do not
// checkpoint it into a moved or unlinked file when they close, so the
// committed data is in the pair (original inode, path-wal); and a process
// that opens the new file at path meets that stale WAL and reads the old
// database's pages through it ("How To Corrupt An SQLite Database File",
// §2.4). No driver can tell a WAL's database apart; so in WAL mode the
// test recovers the pair instead of opening the new file from another
// process, which it does only in rollback-journal mode.
func TestReliabilityFileRenamedOverOrDeleted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses to replace or remove a database SQLite holds open (no FILE_SHARE_DELETE): see lease's TestOpenDatabaseCannotBeReplacedOnWindows")
	}
	for _, c := range []struct {
		name, journal, linger string
		replace               bool
	}{
		{"renamed over", "DELETE", "0", true},
		{"renamed over", "WAL", "0", true},
		{"deleted", "DELETE", "0", false},
		{"deleted", "WAL", "0", false},
		{"renamed over while the row lingers", "DELETE", "1h", true},
		{"renamed over while the row lingers", "WAL", "1h", true},
	} {
		t.Run(c.name+" "+c.journal, func(t *testing.T) {
			path, raw := newFile(t)
			if _, err := raw.Exec(`PRAGMA journal_mode = ` + c.journal); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			ctx := context.Background()
			dsn := "file:" + path + "?_journal_mode=" + c.journal
			db := openLeased(t, dsn+"&_lease_linger="+c.linger)
			var acked []string
			for i := 0; i < 10; i++ {
				v := fmt.Sprintf("before-%d", i)
				write := relWrite
				if i%2 == 1 {
					write = relTxWrite
				}
				if err := write(ctx, db, v); err != nil {
					t.Fatal(err)
				}
				acked = append(acked, v)
			}
			// Keep the original inode reachable, to check it afterwards.
			keep := path + ".keep"
			if err := os.Link(path, keep); err != nil {
				t.Fatal(err)
			}
			if c.replace {
				repl := path + ".new"
				r, err := sql.Open("sqlite3", "file:"+repl+"?_journal_mode=DELETE")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Exec(`CREATE TABLE items(id INTEGER PRIMARY KEY, v TEXT NOT NULL, lane TEXT, epoch INTEGER, pid INTEGER)`); err != nil {
					t.Fatal(err)
				}
				r.Close()
				if err := os.Rename(repl, path); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				v := fmt.Sprintf("after-%d", i)
				err := relWrite(ctx, db, v)
				if err == nil {
					if c.linger == "0" {
						t.Fatalf("a write was accepted after the file was %s", c.name)
					}
					acked = append(acked, v)
					continue
				}
				if !errors.Is(err, cleolease.ErrFileChanged) {
					t.Fatalf("write after the file was %s: %v, want ErrFileChanged", c.name, err)
				}
				break
			}
			for _, f := range []func() error{
				func() error { return relTxWrite(ctx, db, "tx") },
				func() error { return db.PingContext(ctx) },
				// Reads too: with a rollback journal even a read of the old
				// file could play the new file's journal into it.
				func() error { var n int; return db.QueryRowContext(ctx, `SELECT count(*) FROM items`).Scan(&n) },
				func() error { _, err := cleolease.AcquireLease(ctx, db); return err },
			} {
				if err := f(); !errors.Is(err, cleolease.ErrFileChanged) {
					t.Fatalf("after the file was %s: %v, want ErrFileChanged", c.name, err)
				}
			}
			if c.replace && c.journal != "WAL" {
				// Another process takes the lease on the file now at path,
				// from scratch; the stale engine still refuses.
				// (GORACE: a -race child would otherwise sleep 1s at exit.)
				p := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
				p.next(t, "READY")
				p.send("acquire")
				// From scratch: the lane's first row on the new file (a new
				// lane's first epoch is the clock floor, see lease/doc.go).
				ep := p.next(t, "HELD")
				var rows int
				var first string
				if err := relQueryRow(t, path, `SELECT count(*), coalesce(max(epoch), '') FROM _writer_leases`, &rows, &first); err != nil || rows != 1 || first != ep {
					t.Fatalf("lease on the new file at epoch %s; the file has %d lease rows, highest epoch %q (%v): want the lane's first", ep, rows, first, err)
				}
				if err := relWrite(ctx, db, "x"); !errors.Is(err, cleolease.ErrFileChanged) {
					t.Fatalf("stale engine: %v, want ErrFileChanged", err)
				}
				// Its writes are undisturbed by the stale process (which must
				// not so much as read-lock the old inode: SQLite would take
				// the new file's journal, same name, for a hot journal of the
				// old one, roll it back into the old file and delete it).
				const n = 50
				for i := 0; i < n; i++ {
					p.send("exec new-" + strconv.Itoa(i))
					if got := p.next(t, "RES"); got != "ok" {
						t.Fatalf("write %d on the new file: %s", i, got)
					}
				}
				p.send("exit")
				p.Cmd.Wait()
				if got := relItems(t, path); len(got) != n || !got["new-0"] {
					t.Fatalf("the new file holds %v, want only the new process's %d writes", got, n)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			orig := keep
			if c.journal == "WAL" {
				orig = relReunite(t, keep, path)
			}
			got := relItems(t, orig)
			relWantAll(t, got, acked)
			if len(got) != len(acked) {
				t.Fatalf("the original file holds %d items, %d were acknowledged", len(got), len(acked))
			}
			if c.replace && c.journal != "WAL" {
				// A fresh open of path in this process serves the new file.
				db2 := openLeased(t, dsn)
				if err := relWrite(ctx, db2, "fresh"); err != nil {
					t.Fatal(err)
				}
				db2.Close()
				if got := relItems(t, path); len(got) != 51 || !got["fresh"] {
					t.Fatalf("new file holds %v", got)
				}
			}
		})
	}
}

// Config.Clock reaches the lease rows through the driver.
func TestReliabilityConfigClock(t *testing.T) {
	path, raw := newFile(t)
	at := time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)
	cfg, err := cleolease.ParseDSN("file:" + path + "?_lease_linger=1h")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = relFixedClock(at)
	db, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := relWrite(context.Background(), db, "x"); err != nil {
		t.Fatal(err)
	}
	var acquired, heartbeat int64
	if err := raw.QueryRow(`SELECT acquired_at, heartbeat_at FROM _writer_leases WHERE active = 1`).Scan(&acquired, &heartbeat); err != nil {
		t.Fatal(err)
	}
	if acquired != at.UnixMilli() || heartbeat != at.UnixMilli() {
		t.Fatalf("acquired_at %d, heartbeat_at %d; want %d from Config.Clock", acquired, heartbeat, at.UnixMilli())
	}
}

type relFixedClock time.Time

func (c relFixedClock) Now() time.Time { return time.Time(c) }

// ---------------------------------------------------------------------------
// Leaks.
