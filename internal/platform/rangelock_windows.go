//go:build windows

package platform

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/windows"
)

// Windows: LockFileEx byte-range locks on the sidecar. They belong to the
// handle, the OS drops them when the process dies — after a delay that
// "depends on available system resources" (LockFileEx documentation), so
// a probe may see a dead holder alive for a while: slower, never unsafe —
// and they are mandatory, so the locked bytes (all beyond the 24 bytes of
// data) are never read.

func overlapped(start int64) *windows.Overlapped {
	return &windows.Overlapped{Offset: uint32(start), OffsetHigh: uint32(start >> 32)}
}

// lockRange takes an exclusive (write) or shared lock on the n bytes from
// start without waiting: errBusy when another handle holds a conflicting
// one.
func lockRange(f *os.File, start, n int64, write bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if write {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, uint32(n), uint32(n>>32), overlapped(start))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return errBusy
	}
	return err
}

// waitRange takes an exclusive lock on the n bytes from start, waiting
// while another handle holds a conflicting one (LockFileEx without
// LOCKFILE_FAIL_IMMEDIATELY on a synchronous handle blocks the thread).
func waitRange(f *os.File, start, n int64) error {
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, uint32(n), uint32(n>>32), overlapped(start))
}

// turnFile opens a handle of its own for the write turn: a blocking
// LockFileEx on a synchronous handle holds up the handle's other requests
// (the lifetime lock's probes, the wants) until it is granted. It falls
// back to f when the path no longer names f's file (or cannot be opened).
func turnFile(f *os.File, path string) *os.File {
	t, err := openSidecarFile(path, os.O_RDWR, 0)
	if err != nil {
		return f
	}
	a, errA := handleID(windows.Handle(f.Fd()))
	b, errB := handleID(windows.Handle(t.Fd()))
	if errA != nil || errB != nil || a != b {
		t.Close()
		return f
	}
	return t
}

// announcesWaiters: Windows cannot tell which byte of a range another
// handle locks (it has no test), so its write turn has no TurnQueue: a
// process that finds the turn free takes it even while another waits.
const announcesWaiters = false

// firstLocked is never called on Windows (announcesWaiters).
func firstLocked(f *os.File, start, n int64) (int64, bool, error) { return 0, false, nil }

// unlockRange drops this handle's lock on the n bytes from start.
func unlockRange(f *os.File, start, n int64) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, uint32(n), uint32(n>>32), overlapped(start))
}

// testRange reports whether another handle holds a lock on the n bytes
// from start that conflicts with an exclusive (write) or shared lock:
// Windows has no test, so the lock is taken and dropped.
func testRange(f *os.File, start, n int64, write bool) (bool, error) {
	err := lockRange(f, start, n, write)
	if err == errBusy {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	unlockRange(f, start, n)
	return false, nil
}

// fileMark returns the sidecar's file index, and whether path still names
// the open file f.
func fileMark(f *os.File, path string) (string, bool) {
	a, err := handleID(windows.Handle(f.Fd()))
	if err != nil {
		return "", false
	}
	b, err := Stat(path)
	return strconv.FormatUint(a.Ino, 10), err == nil && a == b.ID
}

// openSidecarFile opens the sidecar: os.OpenFile.
func openSidecarFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// fileFS names the volume holding the open file f for provenDirs: its
// serial number.
func fileFS(f *os.File) (string, error) {
	id, err := handleID(windows.Handle(f.Fd()))
	return strconv.FormatUint(id.Dev, 10), err
}

// sameFile reports whether path names the open file f now: false when
// nothing is there or another file is; an error when that cannot be told.
// (While this process has the sidecar open nobody can remove it: Go opens
// it without FILE_SHARE_DELETE.)
func sameFile(f *os.File, path string) (bool, error) {
	a, err := handleID(windows.Handle(f.Fd()))
	if err != nil {
		return false, err
	}
	b, err := Stat(path)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return false, nil
	}
	return err == nil && a == b.ID, err
}

// tierCheck: Windows has one tier.
func tierCheck(f *os.File) error { return nil }

// removable: an open file cannot be removed on Windows; the sidecar stays.
func removable(f *os.File, slot int64) bool { return false }
