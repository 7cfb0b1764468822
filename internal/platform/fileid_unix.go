//go:build unix

package platform

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Stat returns the identity and permission bits of the file at path
// (following symlinks) without opening it.
func Stat(path string) (FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return FileInfo{ID: FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, Mode: fs.FileMode(st.Mode & 0o777)}, nil
}

// fdIno returns the inode of the open descriptor fd.
func fdIno(fd uintptr) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil {
		return 0, err
	}
	return uint64(st.Ino), nil
}

// pathIno returns the inode the path names now (not following symlinks).
func pathIno(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, err
	}
	return uint64(st.Ino), nil
}

// OpenFilePinsPath reports whether a path cannot be made to name another
// file while SQLite holds the file open: false here, a file open by
// SQLite can be renamed over or removed.
const OpenFilePinsPath = false

// sameFile reports whether path names the open file f now: false when
// nothing is there or another file is; an error when that cannot be told.
func sameFile(f *os.File, path string) (bool, error) {
	a, err := fdIno(f.Fd())
	if err != nil {
		return false, err
	}
	b, err := pathIno(path)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return false, nil
	}
	return err == nil && a == b, err
}
