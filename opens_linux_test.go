//go:build linux

package cleolease_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// openFiles counts this process's file descriptors open on path
// (/proc/self/fd).
func openFiles(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestReadingOpensOneConnection: on a file whose lease tables exist, a
// process that only reads opens the database once — its own connection —
// while the liveness lock (the sidecar) is taken at the first connect,
// before any row can name the process. Its first write, on a lane nobody
// holds, claims the lane inside that write's own transaction and releases
// it in the same commit (lease.InlineConfirmer): the lease engine's
// connection stays closed, and the lane is free afterwards.
func TestReadingOpensOneConnection(t *testing.T) {
	path := filepath.Join(testdir.New(t), "reads.db")
	if resolved, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(resolved, filepath.Base(path))
	}
	dsn := "file:" + path + "?_journal_mode=WAL"
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t(a INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := openFiles(t, path); got != 1 {
		t.Errorf("after a read the process has the database open %d times; want 1 (its connection)", got)
	}
	if got := openFiles(t, path+"-cleolease"); got != 1 {
		t.Errorf("after a read the process has the sidecar open %d times; want 1 (the liveness lock)", got)
	}
	if _, err := db.Exec(`INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if got := openFiles(t, path); got != 1 {
		t.Errorf("after a write the process has the database open %d times; want 1 (its connection)", got)
	}
	var active int
	if err := db.QueryRow(`SELECT count(*) FROM _writer_leases WHERE active = 1`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 0 {
		t.Errorf("after one write %d lease rows are active; want the lane released in the write's commit", active)
	}
}
