package mattn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
)

// go-sqlite3's error reads as SQLite's codes, wrapped or not.
func TestReadError(t *testing.T) {
	refusal := sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite, SystemErrno: syscall.EACCES}
	c, ok := sqlbase.Code(fmt.Errorf("commit: %w", refusal))
	if !ok || c.Code != sqlbase.IOErr || c.Extended != int(sqlite3.ErrIoErrWrite) || c.Errno != syscall.EACCES {
		t.Fatalf("Code(refusal) = %+v, %v", c, ok)
	}
	if !sqlbase.WriteRefused(refusal) {
		t.Fatal("a write refused with EACCES is not WriteRefused")
	}
}

// For returns one Base per driver value, and the plain one for nil.
func TestForKeysByDriver(t *testing.T) {
	d1, d2 := &sqlite3.SQLiteDriver{}, &sqlite3.SQLiteDriver{}
	if For(d1) != For(d1) || For(d1).Key() == For(d2).Key() || For(nil) != For(nil) || For(nil).Key() == For(d1).Key() {
		t.Fatal("For does not key bases by driver value")
	}
}

// OpenPrivate runs the driver's ConnectHook but clears the callbacks it
// registers; InspectDSN opens read-only.
func TestOpenPrivateAndInspectDSN(t *testing.T) {
	path := filepath.Join(testdir.New(t), "a b.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	hooked, called := 0, 0
	b := For(&sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		hooked++
		c.RegisterCommitHook(func() int { called++; return 1 }) // vetoes every commit
		return nil
	}})
	conn, err := b.OpenPrivate(context.Background(), "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.(driver.ExecerContext).ExecContext(context.Background(), "INSERT INTO t VALUES (1)", nil); err != nil {
		t.Fatalf("insert on the private connection: %v (the hook's commit veto stayed)", err)
	}
	conn.Close()
	if hooked != 1 || called != 0 {
		t.Fatalf("ConnectHook ran %d times, commit hook %d times; want 1, 0", hooked, called)
	}
	for _, immutable := range []bool{false, true} {
		ro, err := sql.Open("sqlite3", b.InspectDSN(path, immutable, 0))
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := ro.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
			t.Fatalf("read through InspectDSN(immutable=%v): %d, %v", immutable, n, err)
		}
		if _, err := ro.Exec("INSERT INTO t VALUES (2)"); err == nil || !strings.Contains(err.Error(), "readonly") {
			t.Fatalf("write through InspectDSN(immutable=%v): %v, want SQLite's read-only error", immutable, err)
		}
		ro.Close()
	}
}

// go-sqlite3's SQLite locks the database with SQLite's unix VFS (POSIX
// record locks), or its win32 VFS on Windows.
func TestLocking(t *testing.T) {
	want := sqlbase.LockingPOSIX
	if runtime.GOOS == "windows" {
		want = sqlbase.LockingWin32
	}
	if got := For(nil).Locking(); got != want {
		t.Fatalf("Locking() = %q on %s, want %q", got, runtime.GOOS, want)
	}
}
