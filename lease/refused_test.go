package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// refusal is what SQLite returns when a LiteFS replica refuses a write:
// SQLITE_IOERR_WRITE with errno EACCES.
var refusal = sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite, SystemErrno: syscall.EACCES}

func TestWriteRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{refusal, true},
		{&Error{Op: "claim", Err: refusal}, true},
		{sqlite3.Error{Code: sqlite3.ErrReadonly}, true},
		{sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EROFS}, true},
		{sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EIO}, false},
		{sqlite3.Error{Code: sqlite3.ErrFull}, false},
		{errors.New("permission denied"), false},
		{nil, false},
	} {
		if got := WriteRefused(tc.err); got != tc.want {
			t.Errorf("WriteRefused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestOpenOnFileThatRefusesWrites: on a file whose writes are refused (a
// LiteFS replica) and that has no lease tables yet, Open succeeds and
// writes nothing; a lease write gets the refusal; once the file takes
// writes, the first lease write creates the tables. Any other error of
// the bootstrap still fails Open.
func TestOpenOnFileThatRefusesWrites(t *testing.T) {
	// The hook runs on the engine's goroutines too (a settle after the
	// refused claim), so the switch is atomic.
	var refuse atomic.Bool
	refuse.Store(true)
	openHook = func(op string) error {
		if refuse.Load() && (op == "bootstrap/commit" || op == "claim/commit") {
			return refusal
		}
		return nil
	}
	t.Cleanup(func() { openHook = nil })
	path := newDB(t)
	e := openEngine(t, path, nil)
	db := rawDB(t, path)
	tables := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('_writer_leases', '_writer_queue')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := tables(); n != 0 {
		t.Fatalf("%d lease tables after an open whose writes were refused, want 0", n)
	}
	ctx := context.Background()
	if _, err := e.Acquire(ctx, "s", "l", AcquireOptions{Priority: 100, Wait: -1, Require: true}); !WriteRefused(err) {
		t.Fatalf("acquire on a file that refuses writes: %v, want the refusal", err)
	}
	if n := tables(); n != 0 {
		t.Fatalf("%d lease tables after a refused acquire, want 0", n)
	}
	refuse.Store(false)
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatalf("acquire once the file takes writes: %v", err)
	}
	h.Release()
	if n := tables(); n != 2 {
		t.Fatalf("%d lease tables after the first granted acquire, want 2", n)
	}

	openHook = func(op string) error {
		if op == "bootstrap/commit" {
			return sqlite3.Error{Code: sqlite3.ErrFull}
		}
		return nil
	}
	p2 := newDB(t)
	if e2, err := Open(ctx, Options{Base: testBase, Path: p2, DSN: "file:" + p2}); err == nil {
		e2.Close()
		t.Fatal("open whose bootstrap failed with SQLITE_FULL succeeded")
	} else if se := (sqlite3.Error{}); !errors.As(err, &se) || se.Code != sqlite3.ErrFull {
		t.Fatalf("open whose bootstrap failed with SQLITE_FULL: %v, want that error", err)
	}
}

// An engine opened without a base to open its connection with is refused
// with ErrNoBase, naming the file.
func TestOpenWithoutBase(t *testing.T) {
	path := newDB(t)
	e, err := Open(context.Background(), Options{Path: path, DSN: "file:" + path})
	if err == nil {
		e.Close()
		t.Fatal("Open without Options.Base succeeded")
	}
	var le *Error
	if !errors.Is(err, ErrNoBase) || !errors.As(err, &le) || le.Path != path {
		t.Fatalf("Open without Options.Base: %v, want ErrNoBase naming %s", err, path)
	}
}
