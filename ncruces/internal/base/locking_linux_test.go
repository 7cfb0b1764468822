package base_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

// procLockKinds returns the kinds of the locks /proc/locks lists on the
// file path (POSIX, OFDLCK, FLOCK, …), blocked requests excepted.
func procLockKinds(t *testing.T, path string) map[string]bool {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	kinds := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] == "->" {
			continue
		}
		if dev := strings.Split(f[5], ":"); len(dev) == 3 && dev[2] == ino {
			kinds[f[1]] = true
		}
	}
	return kinds
}

// The kind Locking reports is the lock the kernel sees ncruces's VFS take
// on the database file while a connection holds SQLite's RESERVED lock:
// OFD locks by default (/proc/locks "OFDLCK", never "POSIX": a process
// taking POSIX record locks on the file would not see them otherwise),
// flock with the tag sqlite3_flock.
func TestLockingIsTheKernelsLock(t *testing.T) {
	p := filepath.Join(testdir.New(t), "l.db")
	db := openDB(t, "file:"+p)
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	c := conn(t, db)
	if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(context.Background(), "ROLLBACK")
	kind := map[sqlbase.Locking]string{sqlbase.LockingOFD: "OFDLCK", sqlbase.LockingFlock: "FLOCK", sqlbase.LockingPOSIX: "POSIX"}[base.For(nil).Locking()]
	if kind == "" {
		t.Skipf("Locking %q has no /proc/locks kind", base.For(nil).Locking())
	}
	got := procLockKinds(t, p)
	if !got[kind] || len(got) != 1 {
		t.Fatalf("/proc/locks lists %v on the database file inside BEGIN IMMEDIATE; Locking %q wants only %s", got, base.For(nil).Locking(), kind)
	}
}
