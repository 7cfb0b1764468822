//go:build linux && cleolease_portable

package platform

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tierNeeded: on Linux a portable-tier process must announce itself to
// the default tier's processes before it takes part.
const tierNeeded = true

// tierByte is the sidecar byte the portable tier's processes hold a read
// lock on (rangelock_linux.go tests it in the default tier).
const tierByte = 8

// tierJoin announces this portable-tier process on the database at dbPath
// with an open-file-description read lock on tierByte of the sidecar
// "<db>-cleolease", held until leave is called, then refuses
// (ErrTierConflict) if a process of the default Linux tier holds its
// lifetime lock there (a write lock on a slot byte, which the portable
// tier's evidence cannot see). The default tier tests tierByte after
// taking its own lock, so of two processes of different tiers starting at
// once at least one sees the other. This guard is Linux-only (both tiers
// exist only there), so it may use OFD locks. (nil, nil) when the
// directory does not allow the sidecar.
func tierJoin(dbPath string, mode fs.FileMode) (leave func(), err error) {
	p := SidecarPath(dbPath)
	ofd := func(f *os.File, cmd int, typ int16, start, n int64) (int16, error) {
		lk := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
		err := unix.FcntlFlock(f.Fd(), cmd, &lk)
		return lk.Type, err
	}
	for attempt := 0; attempt < 1000; attempt++ {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, mode.Perm())
		if err != nil {
			if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return nil, nil
			}
			return nil, err
		}
		if _, err := ofd(f, unix.F_OFD_SETLK, unix.F_RDLCK, tierByte, 1); err != nil {
			// A closing process holds the whole file while it removes it.
			f.Close()
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
				return nil, err
			}
			time.Sleep(50 * time.Microsecond)
			continue
		}
		a, err1 := fdIno(f.Fd())
		b, err2 := pathIno(p)
		if err1 != nil || err2 != nil || a != b {
			f.Close() // removed meanwhile: open the new one
			continue
		}
		typ, err := ofd(f, unix.F_OFD_GETLK, unix.F_RDLCK, 1<<20, 1<<46-1<<20)
		if err != nil {
			f.Close()
			return nil, err
		}
		if typ != unix.F_UNLCK {
			f.Close()
			return nil, ErrTierConflict
		}
		return func() {
			// The last process removes the sidecar, holding a write lock on
			// all of it while it does (as the default tier does), unless
			// the path names a newer sidecar (this process followed its
			// files to a new one: Follower).
			if _, err := ofd(f, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 0); err == nil {
				removeOwn(p, f)
			}
			f.Close()
		}, nil
	}
	return nil, errors.New("cleolease: sidecar stays locked")
}
