package lease

import (
	"fmt"
	"log/slog"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/sqlbase"
)

// Mixed bases on one file (issue 30). SQLite's own file locks keep two
// processes' writes apart only when both take locks that see each other:
// go-sqlite3 and modernc take POSIX record locks, ncruces OFD locks on
// Linux (which conflict with POSIX record locks), flock(2) on the BSDs and
// illumos or with its build tag sqlite3_flock, and dot-file locks with
// sqlite3_dotlk (sqlbase.Locking). The lease would keep such processes
// from writing at once, but not the application's own transactions
// outside it, nor a process that takes no lease: so a process whose kind
// cannot coexist with another's (sqlbase.Locking.Coexists) is refused at
// Open (ErrLockingConflict), before it touches the database.
//
// Each process announces its kind on the liveness files with a shared
// lock held for its whole life (platform.Announcer: a byte of the sidecar
// on the Linux tier and Windows, a file of the lock directory in the
// portable tier), which the kernel drops when the process dies: no stale
// record, and no write in the database, so Open stays write-free (a
// LiteFS replica). A process announces first and tests the kinds it
// cannot coexist with afterwards, so of two processes opening at once at
// least one sees the other. A process that follows the liveness files to
// new ones (sidecarfollow.go) announces there too; a newcomer that opened
// on the new files before it moved did not see it, which it reports when
// it moves (checkLockingAfterMove). Where there are no liveness files (a
// directory that does not allow them, a platform without them), nothing
// is announced or tested.

// lockingKinds numbers the kinds for the liveness files: kind i is
// announced on the sidecar's kind byte i, or the lock directory's file
// k-<i>. Processes of every version of cleolease share the numbering, so
// it never changes: a new kind is appended.
var lockingKinds = [...]sqlbase.Locking{
	sqlbase.LockingPOSIX,
	sqlbase.LockingOFD,
	sqlbase.LockingFlock,
	sqlbase.LockingDotlk,
	sqlbase.LockingWin32,
}

// lockingNumber is kind's number in lockingKinds, or -1 for a kind it does
// not know.
func lockingNumber(kind sqlbase.Locking) int {
	for i, k := range lockingKinds {
		if k == kind {
			return i
		}
	}
	return -1
}

// announceLocking announces this process's kind of SQLite file lock (its
// base's) on the liveness files locks and refuses, with ErrLockingConflict
// naming both kinds, when another live process of the file announces a
// kind that cannot coexist with it. Locks that announce nothing (none, or
// a test's own) are not asked.
func (e *Engine) announceLocking(locks platform.Locks) error {
	a, ok := locks.(platform.Announcer)
	if !ok {
		return nil
	}
	own := e.opts.Base.Locking()
	n := lockingNumber(own)
	if n < 0 {
		return &Error{Op: "open", Path: e.path, Err: fmt.Errorf("base %s reports a kind of SQLite file lock cleolease does not know: %s", e.opts.Base.Name(), own.Describe())}
	}
	if err := a.Announce(n); err != nil {
		return &Error{Op: "open", Path: e.path, Err: fmt.Errorf("announce the kind of SQLite file lock on the liveness files: %w", err)}
	}
	other, err := conflictingLocking(a, own)
	if err != nil {
		return &Error{Op: "open", Path: e.path, Err: fmt.Errorf("test the kinds of SQLite file lock on the liveness files: %w", err)}
	}
	if other != "" {
		return &Error{Op: "open", Path: e.path, Err: ErrLockingConflict, Reason: lockingReason(e.opts.Base, other)}
	}
	return nil
}

// conflictingLocking returns a kind that another process announces on a
// and that cannot coexist with own, or "" when there is none.
func conflictingLocking(a platform.Announcer, own sqlbase.Locking) (sqlbase.Locking, error) {
	for i, k := range lockingKinds {
		if own.Coexists(k) {
			continue
		}
		held, err := a.Announced(i)
		if err != nil {
			return "", err
		}
		if held {
			return k, nil
		}
	}
	return "", nil
}

// lockingReason is ErrLockingConflict's Reason: both kinds, and the
// remedy.
func lockingReason(base sqlbase.Base, other sqlbase.Locking) string {
	return fmt.Sprintf("this process (%s) locks with %s; another process of this file locks with %s: their locks do not exclude each other; build every program that shares the file with compatible locking",
		base.Name(), base.Locking().Describe(), other.Describe())
}

// checkLockingAfterMove runs after this process followed its liveness
// files to new ones (followSidecar): a process that opened on them before
// it moved could not see its kind, so it tests them, and reports at level
// Error a kind there that cannot coexist with its own (the two processes'
// SQLite locks do not exclude each other; nothing can refuse either now).
func (e *Engine) checkLockingAfterMove() {
	a, ok := e.locks.(platform.Announcer)
	if !ok {
		return
	}
	other, err := conflictingLocking(a, e.opts.Base.Locking())
	if err != nil {
		e.logf(slog.LevelDebug, "cleolease: kinds of SQLite file lock not tested on the new liveness files", "err", err)
		return
	}
	if other != "" {
		e.logf(slog.LevelError, "cleolease: a process that opened the file while its liveness files were being replaced takes SQLite file locks that do not exclude this process's", "reason", lockingReason(e.opts.Base, other))
	}
}
