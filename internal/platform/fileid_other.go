//go:build !unix && !windows

package platform

import (
	"os"
)

// Stat reports the permission bits of the file at path; this platform
// gives no file identity, so two different files compare equal and a
// replaced database goes unnoticed.
func Stat(path string) (FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Mode: fi.Mode().Perm()}, nil
}

// OpenFilePinsPath reports whether a path cannot be made to name another
// file while SQLite holds the file open: false here, a file open by
// SQLite can be renamed over or removed.
const OpenFilePinsPath = false
