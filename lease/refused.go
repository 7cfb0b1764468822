package lease

// A file that refuses writes. A LiteFS replica (its primary alone takes
// writes) opens read-write, reads, and refuses every write with EACCES,
// which SQLite reports as SQLITE_IOERR_WRITE ("disk I/O error: permission
// denied"); a file SQLite opened read-only refuses them with
// SQLITE_READONLY. The engine opens on such a file without its lease
// tables when they are missing (Open: they are then created by the first
// lease write, which is refused in turn), so that reads work and nothing
// is written at open.

import (
	"errors"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// WriteRefused reports whether err (anywhere in its chain) is SQLite's
// report that the file refused a write: SQLITE_READONLY, or an
// SQLITE_IOERR whose system errno is EACCES, EPERM or EROFS.
func WriteRefused(err error) bool {
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case sqlite3.ErrReadonly:
		return true
	case sqlite3.ErrIoErr:
		switch se.SystemErrno {
		case syscall.EACCES, syscall.EPERM, syscall.EROFS:
			return true
		}
	}
	return false
}
