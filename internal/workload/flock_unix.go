//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package workload

import (
	"os"

	"golang.org/x/sys/unix"
)

// haveFlock: this platform has flock(2) (the Flock peer runs here).
const haveFlock = true

// flockFile is the Flock peer's side file. flock(2) locks belong to the
// open file description, so the goroutines of one process share one
// descriptor and sideLock's mutex orders them.
type flockFile struct{ f *os.File }

func openFlock(path string) (*flockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &flockFile{f}, nil
}

func (l *flockFile) lock() error {
	for {
		err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func (l *flockFile) unlock() error { return unix.Flock(int(l.f.Fd()), unix.LOCK_UN) }

func (l *flockFile) close() error { return l.f.Close() }
