//go:build linux && !cleolease_portable

package platform

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// deafRanges answers like a filesystem that ignores byte-range locks
// (LiteFS outside SQLite's lock bytes): every test finds nothing held.
type deafRanges struct{}

func (deafRanges) lock(start, n int64, write bool) error         { return nil }
func (deafRanges) unlock(start, n int64) error                   { return nil }
func (deafRanges) test(start, n int64, write bool) (bool, error) { return false, nil }

// Where a second open file of the sidecar does not see the lifetime lock,
// OpenLocks refuses with ErrLocksIgnored, naming the sidecar, and keeps
// no lock; where it does (this machine's own filesystem), it opens.
func TestOpenLocksProvesConflict(t *testing.T) {
	db := filepath.Join(testdir.New(t), "a.db")
	l, err := OpenLocks(db, 0o644, SlotFor("a"))
	if err != nil || l == nil {
		t.Fatalf("OpenLocks on a local directory: %v, %v", l, err)
	}
	l.Close()

	real := openTester
	t.Cleanup(func() { openTester = real })
	openTester = func(path string) (ranges, func() error, error) {
		return deafRanges{}, func() error { return nil }, nil
	}
	provenDirs.Clear() // (the first open proved this directory)
	l, err = OpenLocks(db, 0o644, SlotFor("a"))
	if !errors.Is(err, ErrLocksIgnored) || l != nil {
		t.Fatalf("OpenLocks where locks are ignored: %v, %v; want ErrLocksIgnored", l, err)
	}
	if want := SidecarPath(db); !contains(err.Error(), want) {
		t.Errorf("error %q does not name the sidecar %s", err, want)
	}
	// Nothing kept: a lock at the same slot is free again.
	openTester = real
	f, err := os.Open(SidecarPath(db))
	if err == nil {
		held, _ := testRange(f, SlotFor("a"), 1, false)
		f.Close()
		if held {
			t.Error("the refused OpenLocks kept its lifetime lock")
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// The proof runs once per directory and filesystem in a process: a second
// open of a sidecar in a proved directory (the last closer removed the
// first one) does not open it again to test, another directory is proved.
func TestOpenLocksProvesADirectoryOnce(t *testing.T) {
	provenDirs.Clear()
	real := openTester
	t.Cleanup(func() { openTester = real })
	tests := 0
	openTester = func(path string) (ranges, func() error, error) {
		tests++
		return real(path)
	}
	dir := testdir.New(t)
	for i, db := range []string{filepath.Join(dir, "a.db"), filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")} {
		l, err := OpenLocks(db, 0o644, SlotFor("a"))
		if err != nil || l == nil {
			t.Fatalf("OpenLocks %d: %v, %v", i, l, err)
		}
		l.Close()
	}
	if tests != 1 {
		t.Fatalf("three opens in one directory proved the locks %d times; want once", tests)
	}
	other := filepath.Join(testdir.New(t), "c.db")
	l, err := OpenLocks(other, 0o644, SlotFor("a"))
	if err != nil || l == nil {
		t.Fatalf("OpenLocks in another directory: %v, %v", l, err)
	}
	l.Close()
	if tests != 2 {
		t.Fatalf("another directory proved %d times in all; want 2", tests)
	}
}
