//go:build linux

package cleolease_test

// Reliability tests that need Linux: mounts (a read-only bind mount, a
// small tmpfs), /proc/self/fd and /proc/locks, open-file-description locks.

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// relReadOnlyDir makes dir read-only for this process: chmod where that
// binds (not root), a read-only bind mount for root (which ignores
// permission bits). It returns an undo function, or skips the test.
func relReadOnlyDir(t *testing.T, dir string) func() {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		return func() { os.Chmod(dir, 0o755) }
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("running as root, which ignores directory permissions; a read-only bind mount needs CAP_SYS_ADMIN: %v", err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		unix.Unmount(dir, 0)
		t.Skipf("remounting read-only needs CAP_SYS_ADMIN: %v", err)
	}
	return func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	}
}

func TestReliabilityReadOnlyDirectory(t *testing.T) {
	for _, mode := range []string{"WAL", "DELETE"} {
		t.Run(mode, func(t *testing.T) {
			dir := filepath.Join(testdir.New(t), "ro")
			os.Mkdir(dir, 0o755)
			path := filepath.Join(dir, "app.db")
			ctx := context.Background()
			dsn := "file:" + path + "?_journal_mode=" + mode
			db := openLeased(t, dsn)
			if _, err := db.Exec(`CREATE TABLE items(id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			var acked []string
			for i := 0; i < 5; i++ {
				v := "v" + strconv.Itoa(i)
				if err := relWrite(ctx, db, v); err != nil {
					t.Fatal(err)
				}
				acked = append(acked, v)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			undo := relReadOnlyDir(t, dir)
			func() {
				defer undo()
				db, err := sql.Open("cleolease", dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				perr := db.PingContext(ctx)
				werr := relWrite(ctx, db, "ro")
				if werr == nil {
					t.Fatal("a write succeeded in a read-only directory")
				}
				var se sqlite3.Error
				if !errors.As(werr, &se) || errors.Is(werr, cleolease.ErrLeaseLost) || errors.Is(werr, cleolease.ErrFileChanged) {
					t.Fatalf("write: %v, want SQLite's own error", werr)
				}
				if perr != nil && !errors.As(perr, &se) {
					t.Fatalf("ping: %v, want SQLite's own error", perr)
				}
				if perr == nil {
					var n int
					if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil || n != len(acked) {
						t.Fatalf("read: %d rows, %v", n, err)
					}
				}
				if _, err := os.Stat(path + "-cleolease"); err == nil {
					t.Fatal("a sidecar appeared in a read-only directory")
				}
			}()
			relWantAll(t, relItems(t, path), acked)
			db = openLeased(t, dsn)
			if err := relWrite(ctx, db, "after"); err != nil {
				t.Fatalf("write once the directory is writable again: %v", err)
			}
		})
	}
}

func TestReliabilityDiskFull(t *testing.T) {
	for _, mode := range []string{"WAL", "DELETE"} {
		t.Run(mode, func(t *testing.T) { relDiskFull(t, mode) })
	}
}

// relDiskFull fills a 1 MiB file system under a leased writer: the failing
// write reports SQLite's SQLITE_FULL (not a lease error), every
// acknowledged write survives, none that failed lands, the lease stays
// coherent, and writing resumes once space is free.
func relDiskFull(t *testing.T, mode string) {
	dir := filepath.Join(testdir.New(t), "small")
	os.Mkdir(dir, 0o755)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mounting a 1 MiB tmpfs needs CAP_SYS_ADMIN (root in the initial user namespace): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	path := filepath.Join(dir, "app.db")
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := openLeased(t, "file:"+path+"?_lease_linger=0&_journal_mode="+mode)
	if _, err := db.Exec(`CREATE TABLE items(id INTEGER PRIMARY KEY, v TEXT NOT NULL, pad BLOB)`); err != nil {
		t.Fatal(err)
	}
	var acked []string
	var full error
	for i := 0; i < 1000; i++ {
		v := "v" + strconv.Itoa(i)
		if _, full = db.ExecContext(ctx, `INSERT INTO items(v, pad) VALUES (?, zeroblob(8192))`, v); full != nil {
			break
		}
		acked = append(acked, v)
	}
	var se sqlite3.Error
	if full == nil || !errors.As(full, &se) || se.Code != sqlite3.ErrFull {
		t.Fatalf("after %d writes: %v, want SQLITE_FULL", len(acked), full)
	}
	if errors.Is(full, cleolease.ErrLeaseLost) || errors.Is(full, cleolease.ErrLeaseUnavailable) {
		t.Fatalf("disk full reported as a lease failure: %v", full)
	}
	// More writes, in transactions, while the disk stays full: each either
	// commits (a smaller page need may still fit) or fails and leaves no trace.
	var failed []string
	for i := 0; i < 3; i++ {
		v := "full-" + strconv.Itoa(i)
		err := func() error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO items(v, pad) VALUES (?, zeroblob(8192))`, v); err != nil {
				tx.Rollback()
				return err
			}
			return tx.Commit()
		}()
		if err == nil {
			acked = append(acked, v)
			continue
		}
		if !errors.As(err, &se) || errors.Is(err, cleolease.ErrLeaseLost) {
			t.Fatalf("write on a full disk: %v, want SQLite's error", err)
		}
		failed = append(failed, v)
	}
	if n := count(t, db, `SELECT count(*) FROM _writer_leases WHERE active = 1`); n > 1 {
		t.Fatalf("%d active lease rows", n)
	}
	os.Remove(filler)
	if err := relTxWrite(ctx, db, "after"); err != nil {
		t.Fatalf("write once space is free again: %v", err)
	}
	acked = append(acked, "after")
	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got := relItems(t, path)
	relWantAll(t, got, acked)
	for _, v := range failed {
		if got[v] {
			t.Fatalf("write %q failed on the full disk, yet landed", v)
		}
	}
	if len(got) != len(acked) {
		t.Fatalf("%d items, %d acknowledged", len(got), len(acked))
	}
}

// relFDs lists this process's open descriptors and what they point to.
func relFDs(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the descriptor ReadDir itself used
		}
		out[e.Name()] = target
	}
	return out
}

func relNewFDs(before, after map[string]string) []string {
	var out []string
	for fd, target := range after {
		if before[fd] != target {
			out = append(out, fd+" -> "+target)
		}
	}
	return out
}

// relLocksOn returns the lines of /proc/locks about the file at path
// (matched by device and inode), and whether the file exists.
func relLocksOn(t *testing.T, path string) []string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for _, x := range fields {
			if x == id {
				out = append(out, sc.Text())
			}
		}
	}
	return out
}

// relSidecarFree checks that the sidecar is gone, or that nobody holds a
// lock on any byte of it (F_OFD_GETLK from a fresh descriptor).
func relSidecarFree(t *testing.T, path string) {
	t.Helper()
	side := path + "-cleolease"
	f, err := os.Open(side)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		t.Fatal(err)
	}
	if lk.Type != unix.F_UNLCK {
		t.Fatalf("the sidecar still holds a lock at %d (+%d)", lk.Start, lk.Len)
	}
	if ls := relLocksOn(t, side); len(ls) != 0 {
		t.Fatalf("/proc/locks still lists the sidecar: %v", ls)
	}
}

// relCycle opens db on dsn, makes a leased write, a transaction and a
// read, holds a lease across them, and closes it.
func relCycle(t *testing.T, dsn string, i int) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := relWrite(ctx, db, "c"+strconv.Itoa(i)); err != nil {
		t.Fatal(err)
	}
	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := relTxWrite(l.Context(ctx), db, "t"+strconv.Itoa(i)); err != nil {
		t.Fatal(err)
	}
	l.Release()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReliabilityNoLeaksAfterClose(t *testing.T) {
	path, raw := newFile(t)
	raw.Close()
	for _, dsn := range []string{"file:" + path, "file:" + path + "?_lease_linger=1h", "file:" + path + "?_journal_mode=DELETE"} {
		relCycle(t, dsn, 0) // warm up: the runtime's poller, SQLite's globals
		ignore := goleak.IgnoreCurrent()
		before := relFDs(t)
		relCycle(t, dsn, 1)
		goleak.VerifyNone(t, ignore)
		if fds := relNewFDs(before, relFDs(t)); len(fds) != 0 {
			t.Fatalf("%s: descriptors left open: %v", dsn, fds)
		}
		relSidecarFree(t, path)
		if ls := relLocksOn(t, path); len(ls) != 0 {
			t.Fatalf("%s: /proc/locks still lists the database: %v", dsn, ls)
		}
	}
}

// Opening and closing a database 1,000 times — each open starts the file's
// lease engine (sidecar and its lock, doorbell socket, inotify, heartbeat),
// every tenth one also takes and releases the lease for a write — leaves
// no goroutine, descriptor or lock behind.
func TestReliabilityOpenClose1000(t *testing.T) {
	path, raw := newFile(t)
	raw.Close()
	dsn := "file:" + path
	ctx := context.Background()
	relCycle(t, dsn, 0)
	ignore := goleak.IgnoreCurrent()
	before := relFDs(t)
	writes := 0
	for i := 1; i <= 1000; i++ {
		db, err := sql.Open("cleolease", dsn)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := relWrite(ctx, db, "w"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
			writes++
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	goleak.VerifyNone(t, ignore)
	if fds := relNewFDs(before, relFDs(t)); len(fds) != 0 {
		t.Fatalf("descriptors left open after 1,000 cycles: %v", fds)
	}
	relSidecarFree(t, path)
	if ls := relLocksOn(t, path); len(ls) != 0 {
		t.Fatalf("/proc/locks still lists the database: %v", ls)
	}
	if got := relItems(t, path); len(got) != 2+writes {
		t.Fatalf("%d items, want %d", len(got), 2+writes)
	}
}
