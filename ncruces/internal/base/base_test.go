package base_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	ncdriver "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

var (
	_ sqlbase.Base   = (*base.Base)(nil)
	_ sqlbase.Driver = (*base.Base)(nil)
)

// For returns one Base per Callbacks pointer (nil for none), whose Key is
// that pointer: two connectors configured with one Callbacks value share
// their file's engine, two with different values do not.
func TestForKeyName(t *testing.T) {
	cb := &base.Callbacks{}
	other := &base.Callbacks{}
	if base.For(nil) != base.For(nil) || base.For(cb) != base.For(cb) {
		t.Fatal("For does not return the same Base for the same Callbacks")
	}
	if base.For(cb) == base.For(nil) || base.For(cb) == base.For(other) {
		t.Fatal("For returns one Base for different Callbacks")
	}
	if base.For(cb).Key() != any(cb) || base.For(nil).Key() != any((*base.Callbacks)(nil)) || base.For(cb).Key() == base.For(other).Key() {
		t.Fatal("Key is not the Callbacks pointer")
	}
	if base.For(cb).Callbacks() != cb || base.For(nil).Callbacks() != nil {
		t.Fatal("Callbacks does not return For's argument")
	}
	if got := base.For(nil).Name(); got != "ncruces" {
		t.Fatalf("Name %q, want ncruces", got)
	}
	if base.For(nil).Hooked() || base.For(&base.Callbacks{Term: func(*sqlite3.Conn) error { return nil }}).Hooked() {
		t.Error("Hooked without an Init callback")
	}
	if !base.For(&base.Callbacks{Init: func(*sqlite3.Conn) error { return nil }}).Hooked() {
		t.Error("not Hooked with an Init callback")
	}
}

// openPrivate opens dsn with b.OpenPrivate, closed when the test ends.
func openPrivate(t *testing.T, b *base.Base, dsn string) driver.Conn {
	t.Helper()
	c, err := b.OpenPrivate(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The application's Init and Term run on the application's connections
// (Open) and never on a private connection (OpenPrivate), which still
// reads the file as they do.
func TestOpenPrivateRunsNoCallback(t *testing.T) {
	p := newDB(t)
	var inits, terms atomic.Int64
	cb := &base.Callbacks{
		Init: func(*sqlite3.Conn) error { inits.Add(1); return nil },
		Term: func(*sqlite3.Conn) error { terms.Add(1); return nil },
	}
	b := base.For(cb)
	c := openPrivate(t, b, dsnOf(p))
	if got := queryValue(t, c, "SELECT n FROM counter"); got != int64(0) {
		t.Fatalf("private connection read %v, want 0", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if inits.Load() != 0 || terms.Load() != 0 {
		t.Fatalf("a private connection ran Init %d times and Term %d times, want none", inits.Load(), terms.Load())
	}
	app, _, err := b.Open(dsnOf(p), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if inits.Load() != 1 || terms.Load() != 1 {
		t.Fatalf("an application connection ran Init %d times and Term %d times, want once each", inits.Load(), terms.Load())
	}
}

// The private connection's busy timeout is the DSN's, set by a _pragma
// wherever it stands; without any _pragma it is ncruces's default of one
// minute, and a DSN with other _pragma values and none for it has none.
func TestOpenPrivateHonoursBusyTimeout(t *testing.T) {
	p := newDB(t)
	for dsn, want := range map[string]int64{
		"file:" + p + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(1234)": 1234,
		"file:" + p + "?_pragma=busy_timeout%3D2345&_pragma=foreign_keys(1)":  2345,
		"file:" + p + "?_pragma=foreign_keys(1)":                              0,
		"file:" + p:                                                           60000,
		p:                                                                     60000,
	} {
		if got := queryValue(t, openPrivate(t, base.For(nil), dsn), "PRAGMA busy_timeout"); got != want {
			t.Errorf("%s: busy_timeout %v, want %d", dsn, got, want)
		}
	}
}

// countingVFS is ncruces's default VFS counting the main database files
// it opens: an open attempt of a connection, seen from outside it.
type countingVFS struct {
	vfs.VFSFilename
	opens atomic.Int64
}

func (v *countingVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	if flags&vfs.OPEN_MAIN_DB != 0 {
		v.opens.Add(1)
	}
	return v.VFSFilename.OpenFilename(name, flags)
}

// counting is registered as the VFS "cleolease-counting".
var counting = func() *countingVFS {
	v := &countingVFS{VFSFilename: vfs.Find("").(vfs.VFSFilename)}
	vfs.Register("cleolease-counting", v)
	return v
}()

// An open that fails busy — its _pragma=journal_mode(WAL) cannot read the
// file while another connection holds an EXCLUSIVE lock — is retried
// (a second open attempt is made) until it succeeds once the lock is
// gone; with a context that has ended, OpenPrivate returns its error.
func TestOpenPrivateRetriesBusyOpen(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(testdir.New(t), "rollback.db")
	db := openDB(t, "file:"+p)
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	holder := conn(t, db)
	if _, err := holder.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	dsn := "file:" + p + "?vfs=cleolease-counting&_pragma=journal_mode(WAL)"
	// Without retries the open fails busy.
	if c, err := (&ncdriver.SQLite{}).Open(dsn); !busy.Is(err) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("open beside an EXCLUSIVE lock: %v, want SQLITE_BUSY", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if c, err := base.For(nil).OpenPrivate(canceled, dsn); !errors.Is(err, context.Canceled) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("OpenPrivate with an ended context: %v, want context.Canceled", err)
	}

	type result struct {
		c   driver.Conn
		err error
	}
	done := make(chan result, 1)
	before := counting.opens.Load()
	go func() {
		c, err := base.For(nil).OpenPrivate(ctx, dsn)
		done <- result{c, err}
	}()
	proctest.Eventually(t, "OpenPrivate's second open attempt", func() bool {
		select {
		case r := <-done:
			t.Fatalf("OpenPrivate beside an EXCLUSIVE lock returned %v after %d attempts, want it to retry until the lock goes", r.err, counting.opens.Load()-before)
		default:
		}
		return counting.opens.Load()-before >= 2
	})
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("OpenPrivate once the lock is gone: %v", r.err)
	}
	t.Cleanup(func() { r.c.Close() })
	if got := queryValue(t, r.c, "PRAGMA journal_mode"); got != "wal" {
		t.Fatalf("journal_mode %v, want wal", got)
	}
}

// InspectDSN opens a file whose path needs escaping in a URI read-only,
// with the busy timeout asked for; its immutable form reads a quiet WAL
// file without creating side files.
func TestInspectDSN(t *testing.T) {
	ctx := context.Background()
	name := "a b?c#d%e&f"
	if runtime.GOOS == "windows" { // no ? in a Windows file name
		name = "a b#d%e&f"
	}
	dir := filepath.Join(testdir.New(t), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.db")
	db, err := sql.Open("sqlite3", sqlbase.FileURI(p, "_pragma=journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t(x); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	db.Close() // the last connection: the -wal and -shm files go
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("the database is not at %s: %v", p, err)
	}
	for _, f := range []string{p + "-wal", p + "-shm"} {
		if _, err := os.Lstat(f); err == nil {
			t.Fatalf("%s left after the last close", f)
		}
	}
	b := base.For(nil)

	dsn := b.InspectDSN(p, true, 0)
	if want := "file:" + (&url.URL{Path: p}).EscapedPath() + "?mode=ro&immutable=1"; dsn != want {
		t.Fatalf("InspectDSN(immutable) = %q, want %q", dsn, want)
	}
	c := openPrivate(t, b, dsn)
	if got := queryValue(t, c, "SELECT x FROM t"); got != int64(7) {
		t.Fatalf("immutable read %v, want 7", got)
	}
	c.Close()
	for _, f := range []string{p + "-wal", p + "-shm"} {
		if _, err := os.Lstat(f); err == nil {
			t.Fatalf("the immutable connection created %s", f)
		}
	}

	dsn = b.InspectDSN(p, false, 2500*time.Millisecond)
	if want := "file:" + (&url.URL{Path: p}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(2500)"; dsn != want {
		t.Fatalf("InspectDSN = %q, want %q", dsn, want)
	}
	if err := (base.Dialect{}).Check(dsn); err != nil {
		t.Fatalf("Check(%q): %v", dsn, err)
	}
	c = openPrivate(t, b, dsn)
	if got := queryValue(t, c, "SELECT x FROM t"); got != int64(7) {
		t.Fatalf("read-only read %v, want 7", got)
	}
	if got := queryValue(t, c, "PRAGMA busy_timeout"); got != int64(2500) {
		t.Fatalf("busy_timeout %v, want 2500", got)
	}
	_, err = c.(driver.ExecerContext).ExecContext(ctx, "INSERT INTO t VALUES (8)", nil)
	if !sqlbase.WriteRefused(err) {
		t.Fatalf("write on the read-only connection: %v, want a refused write", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "x.db", "x.db-wal", "x.db-shm", "x.db.lock": // .lock: sqlite3_dotlk's lock
		default:
			t.Errorf("%s in the directory: a DSN opened another file", e.Name())
		}
	}
}

// The kind of file lock Locking reports is the one ncruces's VFS takes in
// this build: OFD locks on Linux and macOS, flock on the BSDs and illumos
// or with the tag sqlite3_flock, dot files with sqlite3_dotlk, LockFileEx
// on Windows.
func TestLocking(t *testing.T) {
	var want sqlbase.Locking
	switch {
	case buildTag == "sqlite3_dotlk":
		want = sqlbase.LockingDotlk
	case buildTag == "sqlite3_flock":
		want = sqlbase.LockingFlock
	case runtime.GOOS == "linux" || runtime.GOOS == "darwin":
		want = sqlbase.LockingOFD
	case runtime.GOOS == "windows":
		want = sqlbase.LockingWin32
	case runtime.GOOS == "freebsd" || runtime.GOOS == "openbsd" || runtime.GOOS == "netbsd" || runtime.GOOS == "dragonfly" || runtime.GOOS == "illumos":
		want = sqlbase.LockingFlock
	default:
		want = sqlbase.LockingNone
	}
	if got := base.For(nil).Locking(); got != want {
		t.Fatalf("Locking() = %q on %s (tag %q), want %q", got, runtime.GOOS, buildTag, want)
	}
}
