package lease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
)

// skipReplaceOnWindows skips a test that renames a file over the database
// an engine holds open: Windows refuses it (SQLite opens the file without
// FILE_SHARE_DELETE), as TestOpenDatabaseCannotBeReplacedOnWindows checks.
func skipReplaceOnWindows(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses to replace a database SQLite holds open (no FILE_SHARE_DELETE): see TestOpenDatabaseCannotBeReplacedOnWindows")
	}
}

// withPinsPath runs the test with pinsPath set to pins and counts the
// identity stats of checkFile.
func withPinsPath(t *testing.T, pins bool) *atomic.Int64 {
	t.Helper()
	var stats atomic.Int64
	oldPins, oldStat := pinsPath, statFile
	pinsPath = pins
	statFile = func(p string) (platform.FileInfo, error) {
		stats.Add(1)
		return platform.Stat(p)
	}
	t.Cleanup(func() { pinsPath, statFile = oldPins, oldStat })
	return &stats
}

// Where an open file pins its path (Windows' answer), checkFile stats once
// per connection of the engine, and again once that connection changed;
// where it does not, every check stats.
func TestIdentityPinnedWhileConnectionOpen(t *testing.T) {
	for _, pins := range []bool{true, false} {
		t.Run(fmt.Sprintf("pins=%v", pins), func(t *testing.T) {
			stats := withPinsPath(t, pins)
			e := openEngine(t, newDB(t), nil)
			// Counted from before Open: where there is no file watch
			// (Windows) the engine's own first transaction checks too.
			for i := 0; i < 5; i++ {
				if err := e.checkFile(true); err != nil {
					t.Fatal(err)
				}
			}
			n := stats.Load()
			if !pins {
				if n < 5 {
					t.Fatalf("%d stats for 5 checks, want at least 5", n)
				}
				return
			}
			if n != 1 {
				t.Fatalf("%d stats for Open and 5 checks, want 1", n)
			}
			// The connection closed and another opened (as Close and
			// Connect count them): the pin is gone.
			e.conn.changes.Add(2)
			for i := 0; i < 3; i++ {
				if err := e.checkFile(true); err != nil {
					t.Fatal(err)
				}
			}
			if n := stats.Load(); n != 2 {
				t.Fatalf("%d stats after the connection changed, want 2", n)
			}
		})
	}
}

// Where paths are pinned, a replacement made while the engine's
// connection was not open (simulated: the connector counts a close and an
// open) is still ErrFileChanged at the next check, and Acquire reports it.
func TestReplacedWhileUnpinnedIsRefused(t *testing.T) {
	skipReplaceOnWindows(t)
	withPinsPath(t, true)
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	repl := path + ".new"
	if err := os.WriteFile(repl, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repl, path); err != nil {
		t.Fatal(err)
	}
	e.conn.changes.Add(2)
	if err := e.checkFile(true); !errors.Is(err, ErrFileChanged) {
		t.Fatalf("check: %v, want ErrFileChanged", err)
	}
	if _, err := e.Acquire(context.Background(), "s", "l", req); !errors.Is(err, ErrFileChanged) {
		t.Fatalf("Acquire: %v, want ErrFileChanged", err)
	}
}

// The connector counts its connections' opens and closes: a pin lasts
// while the one connection stays open.
func TestConnectorPin(t *testing.T) {
	c := &leaseConnector{dsn: "file:" + newDB(t), base: testBase}
	if _, open := c.pin(); open {
		t.Fatal("open before any connection")
	}
	conn, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gen, open := c.pin()
	if !open {
		t.Fatal("not open with one connection")
	}
	conn.Close()
	conn.Close() // a second Close counts nothing
	if g, open := c.pin(); open || g != gen+1 {
		t.Fatalf("after Close: gen %d open %v, want %d false", g, open, gen+1)
	}
}

// The premise of pinsPath on Windows: while an engine is open, the
// database can be neither replaced nor removed.
func TestOpenDatabaseCannotBeReplacedOnWindows(t *testing.T) {
	if !platform.OpenFilePinsPath {
		t.Skip("this OS lets a file SQLite holds open be renamed over or removed (TestReplacedFileIsRefused)")
	}
	path := newDB(t)
	e := openEngine(t, path, nil)
	repl := path + ".new"
	if err := os.WriteFile(repl, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repl, path); err == nil {
		t.Fatal("renamed a file over the open database")
	}
	if err := os.Remove(path); err == nil {
		t.Fatal("removed the open database")
	}
	if err := os.Rename(path, path+".moved"); err == nil {
		t.Fatal("renamed the open database away")
	}
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
}

// A stat that fails for another reason than a missing file (under Wine a
// loaded process's failed with "too many open files") fails that check
// only: it is not ErrFileChanged, and the next check stats again.
func TestIdentityStatErrorIsNotReplacement(t *testing.T) {
	withPinsPath(t, false) // every check stats (Windows would pin)
	path := newDB(t)
	e := openEngine(t, path, nil)
	old := statFile
	emfile := &fs.PathError{Op: "stat", Path: path, Err: syscall.EMFILE}
	statFile = func(string) (platform.FileInfo, error) { return platform.FileInfo{}, emfile }
	err := e.checkFile(true)
	if err == nil || errors.Is(err, ErrFileChanged) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("check with a failing stat: %v, want the stat's error, not ErrFileChanged", err)
	}
	statFile = old
	if err := e.checkFile(true); err != nil {
		t.Fatalf("check after the stat recovered: %v", err)
	}
	if h, err := e.Acquire(context.Background(), "s", "l", req); err != nil {
		t.Fatalf("Acquire after the stat recovered: %v", err)
	} else {
		h.Release()
	}
}
