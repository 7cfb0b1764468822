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

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/modernc/internal/base"
)

var _ sqlbase.Base = (*base.Base)(nil)

// registered returns the driver modernc registers as "sqlite".
func registered(t *testing.T) *sqlite.Driver {
	t.Helper()
	db, err := sql.Open("sqlite", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.Driver().(*sqlite.Driver)
}

func TestForKeyName(t *testing.T) {
	reg := registered(t)
	own := &sqlite.Driver{}
	if base.For(nil) != base.For(reg) || base.For(nil).Driver() != reg {
		t.Fatal(`For(nil) is not the Base of the registered "sqlite" driver`)
	}
	if base.For(own) != base.For(own) || base.For(own) == base.For(nil) {
		t.Fatal("For does not return one Base per driver value")
	}
	if base.For(own).Key() != any(own) || base.For(own).Key() == base.For(nil).Key() {
		t.Fatal("Key is not the driver value")
	}
	if got := base.For(nil).Name(); got != "modernc" {
		t.Fatalf("Name %q, want modernc", got)
	}
}

// queryPrivate returns the first column of query's first row on c, a
// connection OpenPrivate opened.
func queryPrivate(t *testing.T, c driver.Conn, query string) driver.Value {
	t.Helper()
	rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), query, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	v := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(v); err != nil {
		t.Fatal(err)
	}
	return v[0]
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

// The application's connection hooks — the package-level one (on the
// registered driver, TestMain) and a constructed driver's own — run on
// the application's connections and never on a private connection,
// whichever driver the Base was made for.
func TestOpenPrivateRunsNoConnectionHook(t *testing.T) {
	p := newDB(t)
	before := hooksFor(p)
	if err := openDB(t, dsnOf(p)).Ping(); err != nil {
		t.Fatal(err)
	}
	if got := hooksFor(p); got != before+1 {
		t.Fatalf("the package-level hook ran %d times for an application connection, want 1", got-before)
	}
	var ownCalls atomic.Int64
	own := &sqlite.Driver{}
	own.RegisterConnectionHook(func(sqlite.ExecQuerierContext, string) error {
		ownCalls.Add(1)
		return nil
	})
	for _, b := range []*base.Base{base.For(nil), base.For(registered(t)), base.For(own)} {
		c := openPrivate(t, b, dsnOf(p))
		if got := queryPrivate(t, c, "SELECT n FROM counter"); got != int64(0) {
			t.Fatalf("private connection read %v, want 0", got)
		}
	}
	if got := hooksFor(p); got != before+1 {
		t.Fatalf("the package-level hook ran on %d private connections, want none", got-before-1)
	}
	if n := ownCalls.Load(); n != 0 {
		t.Fatalf("a constructed driver's own hook ran on %d private connections, want none", n)
	}
}

// The private connection's busy timeout is the DSN's, set by a _pragma
// wherever it stands, or by modernc's _busy_timeout key.
func TestOpenPrivateHonoursBusyTimeout(t *testing.T) {
	p := newDB(t)
	for dsn, want := range map[string]int64{
		"file:" + p + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(1234)": 1234,
		"file:" + p + "?_pragma=busy_timeout%3D2345&_pragma=foreign_keys(1)":  2345,
		"file:" + p + "?_busy_timeout=3456":                                   3456,
		"file:" + p:                                                           0,
	} {
		if got := queryPrivate(t, openPrivate(t, base.For(nil), dsn), "PRAGMA busy_timeout"); got != want {
			t.Errorf("%s: busy_timeout %v, want %d", dsn, got, want)
		}
	}
}

// An open that fails busy — its _pragma=journal_mode(WAL) cannot read the
// file while another connection holds an EXCLUSIVE lock — is retried
// until the context ends, then succeeds once the lock is gone.
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
	dsn := "file:" + p + "?_pragma=journal_mode(WAL)"
	// Without retries the open fails busy.
	if c, err := (&sqlite.Driver{}).Open(dsn); !busy.Is(err) {
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
		t.Fatalf("OpenPrivate with an ended context beside an EXCLUSIVE lock: %v, want context.Canceled (a retry)", err)
	}
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	c := openPrivate(t, base.For(nil), dsn)
	if got := queryPrivate(t, c, "PRAGMA journal_mode"); got != "wal" {
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
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Opaque: (&url.URL{Path: p}).EscapedPath(), RawQuery: "_pragma=journal_mode(WAL)"}).String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t(x); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	db.Close() // the last connection: the -wal and -shm files go
	for _, f := range []string{p + "-wal", p + "-shm"} {
		if _, err := os.Lstat(f); err == nil {
			t.Fatalf("%s left after the last close", f)
		}
	}
	b := base.For(nil)

	c := openPrivate(t, b, b.InspectDSN(p, true, 0))
	if got := queryPrivate(t, c, "SELECT x FROM t"); got != int64(7) {
		t.Fatalf("immutable read %v, want 7", got)
	}
	c.Close()
	for _, f := range []string{p + "-wal", p + "-shm"} {
		if _, err := os.Lstat(f); err == nil {
			t.Fatalf("the immutable connection created %s", f)
		}
	}

	dsn := b.InspectDSN(p, false, 2500*time.Millisecond)
	if want := "file:" + (&url.URL{Path: p}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(2500)"; dsn != want {
		t.Fatalf("InspectDSN = %q, want %q", dsn, want)
	}
	c = openPrivate(t, b, dsn)
	if got := queryPrivate(t, c, "SELECT x FROM t"); got != int64(7) {
		t.Fatalf("read-only read %v, want 7", got)
	}
	if got := queryPrivate(t, c, "PRAGMA busy_timeout"); got != int64(2500) {
		t.Fatalf("busy_timeout %v, want 2500", got)
	}
	_, err = c.(driver.ExecerContext).ExecContext(ctx, "INSERT INTO t VALUES (8)", nil)
	if !sqlbase.WriteRefused(err) {
		t.Fatalf("write on the read-only connection: %v, want a refused write", err)
	}
}

// modernc's SQLite locks the database with SQLite's unix VFS (POSIX record
// locks), as C SQLite does (go-sqlite3: the two coexist), or its win32 VFS
// on Windows.
func TestLocking(t *testing.T) {
	want := sqlbase.LockingPOSIX
	if runtime.GOOS == "windows" {
		want = sqlbase.LockingWin32
	}
	if got := base.For(nil).Locking(); got != want {
		t.Fatalf("Locking() = %q on %s, want %q", got, runtime.GOOS, want)
	}
}
