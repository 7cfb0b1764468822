package platform

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Files opened without Go's network poller. A process's first os.Open or
// os.ReadFile starts the poller (an epoll instance and its wake-up
// descriptor: about 0.1 ms on the project's machines), and every such
// open then tries to register the file with it. A short process whose
// only write claims a free lane inside its own transaction needs the
// poller for nothing else (no doorbell socket, no file watch), so the
// files the lease engine opens on that path — /proc's identity files and
// the sidecar — are opened with plain system calls: a blocking
// descriptor given to os.NewFile is never registered.

// readFileNoPoll is os.ReadFile without the poller, for small files
// (/proc's). Errors are *fs.PathError wrapping the system call's errno,
// as os.ReadFile's.
func readFileNoPoll(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// openFileNoPoll is os.OpenFile without the poller: flag and perm as
// os.OpenFile takes them (O_CLOEXEC is added). Errors are *fs.PathError
// wrapping the errno, as os.OpenFile's.
func openFileNoPoll(path string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
