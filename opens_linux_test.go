//go:build linux

package cleolease_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease"
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

// tableMade makes a database (its directory's symbolic links resolved,
// as /proc/self/fd names it) with table t, through cleolease with the DSN
// "file:" + path + query, which it returns, closed: a new process's file
// whose lease tables exist.
func tableMade(t *testing.T, query string) (path, dsn string) {
	t.Helper()
	path = filepath.Join(testdir.New(t), "app.db")
	if resolved, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(resolved, filepath.Base(path))
	}
	dsn = "file:" + path + query
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
	return path, dsn
}

// TestReadingOpensOneConnection: on a file whose lease tables exist, a
// process that only reads opens the database once — its own connection;
// the lease engine opens none of its own — while the
// liveness lock (the sidecar) is taken at the first connect, before any
// row can name the process.
func TestReadingOpensOneConnection(t *testing.T) {
	path, dsn := tableMade(t, "?_journal_mode=WAL")
	db, err := sql.Open("cleolease", dsn)
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
		t.Errorf("after a write the process has the database open %d times; want 1 (its connection, lent to the lease engine for the claim)", got)
	}
}

// TestWritingOnceNeverOpensTheEnginesConnection: a process that opens the
// file, writes once and closes — a CLI command — runs the lease's claim
// and its release on its own connection (lent to the engine), so it never
// has the database open twice; the row it kept between writes is released
// by Close, and the sidecar removed.
func TestWritingOnceNeverOpensTheEnginesConnection(t *testing.T) {
	path, dsn := tableMade(t, "?_journal_mode=WAL&_lease_linger=1h")
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if got := openFiles(t, path); got != 1 {
		t.Errorf("inside the first transaction the process has the database open %d times; want 1", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	dtWantHolder(t, path, cleolease.DefaultScope, cleolease.DefaultLane) // kept between writes (_lease_linger=1h)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := openFiles(t, path); got != 0 {
		t.Errorf("after Close the process has the database open %d times", got)
	}
	dtWantNoHolder(t, path)
	if _, err := os.Stat(path + "-cleolease"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sidecar after Close: %v; want it removed", err)
	}
}
