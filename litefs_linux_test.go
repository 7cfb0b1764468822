//go:build linux

package cleolease_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/litefstest"
	"github.com/cleocode/cleolease/internal/testdir"
)

// LiteFS (issue 23, item 1): on a real two-node cluster, processes on the
// primary given no parameter at all take the lease safely, and create
// nothing in the mount but SQLite's own files.

// liteFSDB creates the tables of the intercept roles (counter, log,
// items) in app.db on the cluster's primary, with go-sqlite3, in WAL mode
// (LiteFS in rollback-journal mode is about 15 times slower: see the
// README), and returns the DSN the workers open: no cleolease parameter.
func liteFSDB(t *testing.T, c *litefstest.Cluster) string {
	t.Helper()
	path := c.Primary.Path("app.db")
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
		INSERT INTO counter VALUES (1, 0);
		CREATE TABLE log(id INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT NOT NULL, n INTEGER NOT NULL);
		CREATE TABLE items(id INTEGER PRIMARY KEY, v TEXT NOT NULL, lane TEXT, epoch INTEGER, pid INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return "file:" + path + "?_journal_mode=WAL"
}

// liteFSQuery reads one integer from the primary's app.db.
func liteFSQuery(t *testing.T, c *litefstest.Cluster, q string) int {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+c.Primary.Path("app.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// onlySQLiteFiles fails the test when the mount holds a file that is not
// app.db or one of SQLite's companions (LiteFS shows -pos, and .lag; a
// replica .primary), or one of the names of cleolease's liveness files
// (LiteFS lets a file such as app.db-cleolease be created but does not
// list it, so they are looked up by name too).
func onlySQLiteFiles(t *testing.T, mount string) {
	t.Helper()
	for _, name := range []string{"app.db-cleolease", "app.db-cleolease.d", "app.db-cleolease.nonce"} {
		if _, err := os.Lstat(filepath.Join(mount, name)); err == nil {
			t.Errorf("%s in the LiteFS mount: cleolease created a file of its own there", name)
		}
	}
	ents, err := os.ReadDir(mount)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"app.db": true, "app.db-wal": true, "app.db-shm": true, "app.db-journal": true, "app.db-pos": true, ".lag": true, ".primary": true}
	for _, e := range ents {
		if !allowed[e.Name()] {
			t.Errorf("%s in the LiteFS mount: cleolease created a file of its own there", e.Name())
		}
	}
}

// Six processes × N read-modify-write increments in BeginTx on the
// primary, with no cleolease parameter: the exact total, no error, and
// nothing but SQLite's files in the mount; the liveness files are in the
// derived local directory. Before the fix (main at 0a292dc) the sidecar
// was created in the mount, whose locks nobody else sees, and live holders
// were robbed: commits failed "lease lost".
func TestLiteFSNoConfiguration(t *testing.T) {
	c := litefstest.Start(t)
	dsn := liteFSDB(t, c)
	tmp := testdir.New(t) // the workers' temporary directory ($TMPDIR)
	n := 50
	if s := os.Getenv("CLEOLEASE_LITEFS_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const procs = 6
	var ws []*child
	for i := range procs {
		ws = append(ws, startChild(t, "intercept-rmw", dsn, "TMPDIR="+tmp, "CLEOLEASE_N="+strconv.Itoa(n), "CLEOLEASE_G=1", "CLEOLEASE_WHO=w"+strconv.Itoa(i)))
	}
	for _, w := range ws {
		w.expect("READY")
	}
	start := time.Now()
	for _, w := range ws {
		w.send("go")
	}
	commits, fails := 0, 0
	for _, w := range ws {
		f := strings.Fields(w.expect("RESULT"))
		ok, _ := strconv.Atoi(f[0])
		bad, _ := strconv.Atoi(f[1])
		commits += ok
		fails += bad
		if bad > 0 {
			t.Errorf("worker: %d commits, %d errors, first: %s", ok, bad, strings.Join(f[3:], " "))
		}
	}
	took := time.Since(start)
	t.Logf("%d processes x %d increments: %s, %.0f commits/s (a figure, not a check)", procs, n, took.Round(time.Millisecond), float64(commits)/took.Seconds())
	onlySQLiteFiles(t, c.Primary.Mount)
	if got := liteFSQuery(t, c, `SELECT n FROM counter WHERE id = 1`); got != procs*n || commits != procs*n || fails != 0 {
		t.Fatalf("counter %d, %d commits, %d errors; want %d, %d, 0", got, commits, fails, procs*n, procs*n)
	}
	// The workers have exited (the last one removes the liveness files);
	// the nonce stays.
	if nonces, _ := filepath.Glob(filepath.Join(tmp, "cleolease", "app.db-*-cleolease.nonce")); len(nonces) != 1 {
		t.Errorf("derived directory holds nonces %v; want one", nonces)
	}
}

// A process that derives another directory for the liveness files (here
// another $TMPDIR, as a private /tmp or a container would give) while a
// process of the first directory holds the lane (between transactions,
// so SQLite's own write lock does not stand in the way): its write fails
// with ErrSidecarDir naming _lease_sidecar_dir, and the holder is not
// robbed: its lease still checks and its next write commits. Before the
// fix both kept the sidecar in the mount, where the second process did not
// see the holder's lock, judged it dead and took the lane: the holder's
// check failed "lease lost".
func TestLiteFSOtherDirectoryRefused(t *testing.T) {
	c := litefstest.Start(t)
	dsn := liteFSDB(t, c)
	tmpA := testdir.New(t)
	a := startChild(t, "intercept-hold", dsn, "TMPDIR="+tmpA)
	a.expect("READY")
	a.send("acquire")
	a.expect("HELD")
	// The holder's liveness files and nonce are in its derived directory.
	sidecars, _ := filepath.Glob(filepath.Join(tmpA, "cleolease", "app.db-*-cleolease"))
	lockDirs, _ := filepath.Glob(filepath.Join(tmpA, "cleolease", "app.db-*-cleolease.d")) // the portable tier's
	nonces, _ := filepath.Glob(filepath.Join(tmpA, "cleolease", "app.db-*-cleolease.nonce"))
	if len(nonces) != 1 || len(sidecars)+len(lockDirs) == 0 {
		t.Errorf("the holder's derived directory holds nonces %v, sidecars %v and lock directories %v; want one nonce and the liveness files", nonces, sidecars, lockDirs)
	}
	b := startChild(t, "intercept-hold", dsn, "TMPDIR="+testdir.New(t))
	b.expect("READY")
	b.send("tx b")
	if res := b.expect("RES"); !strings.Contains(res, cleolease.ErrSidecarDir.Error()) || !strings.Contains(res, "_lease_sidecar_dir") {
		t.Errorf("write from another derived directory: %q; want ErrSidecarDir naming _lease_sidecar_dir", res)
	}
	a.send("check")
	if res := a.expect("RES"); res != "ok" {
		t.Fatalf("the holder's lease: %q; want ok (not robbed)", res)
	}
	a.send("tx a")
	if res := a.expect("RES"); res != "ok" {
		t.Fatalf("the holder's write: %q; want ok", res)
	}
	if got := liteFSQuery(t, c, `SELECT count(*) FROM items`); got != 1 {
		t.Fatalf("%d items; want the holder's only", got)
	}
	onlySQLiteFiles(t, c.Primary.Mount)

	// On the replica, a process of yet another directory still reads:
	// the proof runs only in lease transactions that write anyway.
	litefstest.WaitReplicated(t, "app.db", c.Primary, c.Replica)
	t.Setenv("TMPDIR", testdir.New(t))
	db, err := sql.Open("cleolease", "file:"+c.Replica.Path("app.db")+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("read on the replica: %d items, %v; want 1", n, err)
	}
}
