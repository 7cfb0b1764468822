package sqlbase

import "strconv"

// Locking is the kind of file lock a base's SQLite takes on the database
// file to keep two processes' transactions apart. SQLite's locks exclude
// each other across processes only when both processes take locks that
// see each other (https://sqlite.org/lockingv3.html; on Unix,
// https://sqlite.org/howtocorrupt.html §2): a process that locks with
// flock and one that locks with POSIX record locks both "hold" the write
// lock at once, and the file is corrupted. Each process of a file
// announces its kind beside the database, and a process whose kind cannot
// coexist with another's is refused at open (package lease).
type Locking string

// The kinds of SQLite file locks of the bases cleolease runs on.
const (
	// LockingPOSIX: POSIX fcntl record locks, SQLite's unix VFS (C
	// SQLite: go-sqlite3; modernc.org/sqlite, translated from it).
	LockingPOSIX Locking = "posix"
	// LockingOFD: open-file-description locks (F_OFD_SETLK), ncruces's
	// default on Linux and macOS. They conflict with POSIX record locks
	// (Linux fcntl(2): "OFD locks ... conflict with traditional record
	// locks"; ncruces's vfs README calls its default compatible with
	// SQLite's unix VFS), so they coexist with LockingPOSIX.
	LockingOFD Locking = "ofd"
	// LockingFlock: BSD flock(2) locks, ncruces's on the BSDs and illumos
	// and with its build tag sqlite3_flock. On Linux flock and fcntl locks
	// do not interact (flock(2)): they coexist with nothing else.
	LockingFlock Locking = "flock"
	// LockingDotlk: dot-file locks (a lock file beside the database),
	// ncruces's with its build tag sqlite3_dotlk: they coexist with
	// nothing else.
	LockingDotlk Locking = "dotlk"
	// LockingWin32: LockFileEx, SQLite's win32 VFS: every base on Windows.
	LockingWin32 Locking = "win32"
	// LockingNone: no file locks (ncruces on an OS its VFS has no locks
	// for): it coexists with nothing, not even itself.
	LockingNone Locking = "none"
)

// Coexists reports whether a process locking with a and one locking with
// b keep each other's writes apart on one file: the same kind, or POSIX
// record locks with OFD locks (which conflict with each other on Linux
// and macOS, the OSes whose bases use OFD locks). Nothing else: an
// unknown kind coexists only with itself, and LockingNone with nothing.
func (a Locking) Coexists(b Locking) bool {
	if a == LockingNone || b == LockingNone {
		return false
	}
	if a == b {
		return true
	}
	return a == LockingPOSIX && b == LockingOFD || a == LockingOFD && b == LockingPOSIX
}

// Describe names the kind with the lock it is and the bases that take it,
// for errors: "posix (fcntl record locks: go-sqlite3, modernc)".
func (a Locking) Describe() string {
	switch a {
	case LockingPOSIX:
		return "posix (fcntl record locks: go-sqlite3, modernc)"
	case LockingOFD:
		return "ofd (open-file-description locks: ncruces on Linux and macOS)"
	case LockingFlock:
		return "flock (flock(2): ncruces built with sqlite3_flock, or on the BSDs and illumos)"
	case LockingDotlk:
		return "dotlk (dot-file locks: ncruces built with sqlite3_dotlk)"
	case LockingWin32:
		return "win32 (LockFileEx: every base on Windows)"
	case LockingNone:
		return "none (no file locks: ncruces on an OS its VFS cannot lock on)"
	}
	return strconv.Quote(string(a)) + " (an unknown kind)"
}
