//go:build linux && !cleolease_portable

package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Linux tier: open-file-description locks (F_OFD_SETLK, F_OFD_GETLK).
// Unlike classic POSIX fcntl locks they belong to the open file, not to
// the process, so closing another descriptor of the sidecar drops none of
// them, and a test (F_OFD_GETLK) changes nothing.

// lockRange takes a write (or read) lock on the n bytes from start,
// without waiting: errBusy when another open file holds a conflicting one.
func lockRange(f *os.File, start, n int64, write bool) error {
	typ := int16(unix.F_RDLCK)
	if write {
		typ = unix.F_WRLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return errBusy
	}
	return err
}

// waitRange takes a write lock on the n bytes from start, waiting while
// another open file holds a conflicting one (F_OFD_SETLKW: the kernel
// restarts the wait after a signal, Go's handlers being SA_RESTART).
func waitRange(f *os.File, start, n int64) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: start, Len: n}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLKW, &lk)
		if err != unix.EINTR {
			return err
		}
	}
}

// unlockRange drops this open file's locks on the n bytes from start.
func unlockRange(f *os.File, start, n int64) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: start, Len: n}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

// testRange reports whether another open file holds a lock on the n bytes
// from start that conflicts with a write lock (any lock) or, with write
// false, with a read lock (a write lock). A read test works on a
// read-only descriptor too.
func testRange(f *os.File, start, n int64, write bool) (bool, error) {
	typ := int16(unix.F_RDLCK)
	if write {
		typ = unix.F_WRLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

// turnFile is the open file the write turn is locked through: the
// sidecar's own (an OFD lock's blocking wait holds up nothing else).
func turnFile(f *os.File, path string) *os.File { return f }

// announcesWaiters: F_OFD_GETLK tells which byte another open file locks,
// so the write turn's waiters announce themselves (TurnQueue).
const announcesWaiters = true

// firstLocked returns the start of a lock that another open file holds on
// the n bytes from start (F_OFD_GETLK reports one of them), and whether
// there is one.
func firstLocked(f *os.File, start, n int64) (int64, bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: start, Len: n}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return 0, false, err
	}
	if lk.Type == unix.F_UNLCK {
		return 0, false, nil
	}
	return max(lk.Start, start), true, nil
}

// fileMark returns the sidecar's inode (what holder_start records), and
// whether path still names the open file f.
func fileMark(f *os.File, path string) (string, bool) {
	a, err := fdIno(f.Fd())
	if err != nil {
		return "", false
	}
	b, err := pathIno(path)
	return strconv.FormatUint(a, 10), err == nil && a == b
}

// openSidecarFile opens the sidecar (os.OpenFile's flag and perm) without
// Go's network poller (openFileNoPoll).
func openSidecarFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openFileNoPoll(path, flag, perm)
}

// fileFS names the filesystem holding the open file f for provenDirs: its
// device and, where the kernel gives it (statx, Linux 5.8), its mount's
// id, which another mount at the same directory does not share even when
// it is given a device number freed by an earlier mount (FUSE and NFS
// mounts get anonymous ones).
func fileFS(f *os.File) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_MNT_ID, &st); err == nil {
		dev := unix.Mkdev(st.Dev_major, st.Dev_minor)
		if st.Mask&unix.STATX_MNT_ID != 0 {
			return fmt.Sprintf("%d/%d", dev, st.Mnt_id), nil
		}
		return fmt.Sprintf("%d", dev), nil
	}
	var fst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fst); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d", fst.Dev), nil
}

// tierByte is the sidecar byte on which every portable-tier process on
// Linux holds a read lock for its life (tier_linux.go).
const tierByte = 8

// tierCheck refuses to share the database with processes of the portable
// tier (build tag cleolease_portable), whose liveness evidence this tier
// cannot see: they hold a read lock on tierByte of the sidecar. This
// process already holds its lifetime lock, which a portable process tests
// after taking its read lock, so of two processes of different tiers
// starting at once at least one sees the other.
func tierCheck(f *os.File) error {
	held, err := testRange(f, tierByte, 1, true)
	if err != nil {
		return err
	}
	if held {
		return ErrTierConflict
	}
	return nil
}

// removable reports whether nobody else uses the sidecar: no other open
// file holds a lock on any byte (portable-tier processes included, see
// tierByte). It then keeps a write lock on the whole file, so that a
// process that opens the sidecar now fails to lock it until it is removed,
// and then sees that the path names another file.
func removable(f *os.File, slot int64) bool {
	return lockRange(f, 0, 0, true) == nil
}
