package lease

import (
	"errors"
	"fmt"

	"github.com/cleocode/cleolease/internal/platform"
)

// Sentinel errors of the lease engine. Every error the engine returns for a
// lease-level failure is an *Error whose Unwrap yields one of these, so callers
// test them with errors.Is and read the details with errors.As.
var (
	// ErrUnavailable: no grant within the wait bound while a live holder kept
	// the lane (mode require), or the engine could not run at all.
	ErrUnavailable = errors.New("lease unavailable")
	// ErrLost: the caller's (holder, epoch) is no longer the active one — the
	// lane was broken administratively, taken over by another holder, or its
	// row deleted by another connection; the *Error's Reason says which. A
	// fenced commit that finds this rolls back (a transaction that removed
	// the row itself is no loss: it commits, see Fencing).
	ErrLost = errors.New("lease lost")
	// ErrFileChanged: the database path now names another file (different
	// device or inode) than the one this engine was opened on.
	ErrFileChanged = errors.New("database file replaced or removed")
	// ErrIndexMissing: the partial unique index ux_writer_leases_active is
	// missing, so "one active holder per (scope, lane)" is not enforced by
	// SQLite. The engine refuses to run rather than tolerate it.
	ErrIndexMissing = errors.New("lease index ux_writer_leases_active is missing")
	// ErrUntrusted: the lease tables hold contents the engine cannot trust
	// (several active rows, impossible values). Nothing is granted.
	ErrUntrusted = errors.New("lease tables hold untrusted contents")
	// ErrHolderAlive: Break refused because the holder is provably alive and
	// force was not given.
	ErrHolderAlive = errors.New("lease holder is alive")
	// ErrDriverMismatch: Open was asked to share this process's engine of a
	// file with a different base driver than the one it was opened with.
	ErrDriverMismatch = errors.New("lease engine already open with another base driver")
	// ErrNoBase: Open was given no Options.Base to open its connection
	// with.
	ErrNoBase = errors.New("no base driver given (Options.Base)")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("lease engine closed")
	// ErrTierConflict: Open refused because processes of the other Linux
	// liveness tier (built with or without the build tag
	// cleolease_portable) use the database; neither could see the other's
	// liveness evidence, so they never share a file.
	ErrTierConflict = platform.ErrTierConflict
	// ErrLockingConflict: Open refused because another live process of the
	// file takes SQLite file locks that do not exclude this process's (its
	// base's sqlbase.Locking cannot coexist with the other's: flock and
	// POSIX record locks, say, which do not interact on Linux), so their
	// writes could overlap and corrupt the file. The *Error's Reason names
	// both kinds; the remedy is to build every program that shares the
	// file with compatible locking.
	ErrLockingConflict = errors.New("another process of this file takes SQLite file locks that do not exclude this process's")
	// ErrSidecarDir: the liveness files cannot prove that a holder is
	// alive where they are, so the engine refuses rather than judge live
	// holders dead: their locks are not seen from another open file (the
	// filesystem ignores them: a LiteFS or other FUSE mount, a network
	// share), or processes of this host keep them in different places —
	// beside the database and in a sidecar directory, or in two
	// directories (two _lease_sidecar_dir, a private /tmp, a container,
	// another mount path deriving another directory for a LiteFS mount) —
	// as the token recorded in the database shows (sidecarproof.go). The
	// *Error's Reason says which; the remedy is one _lease_sidecar_dir (a
	// local directory) given by every process, or none.
	ErrSidecarDir = errors.New("the liveness files need _lease_sidecar_dir")
)

// Error describes a lease failure: the operation, the file and lane it
// concerns, the holder that stood in the way (if known) and the cause.
// Unwrap returns Err, which is one of the sentinels above, a context error or
// an SQLite error.
type Error struct {
	Op     string // "acquire", "release", "fence", "break", "open", ...
	Path   string // resolved database path
	Scope  string
	Lane   string
	Holder string // the holder that blocked or replaced us, if known
	Epoch  int64  // the caller's epoch, if it had one
	Reason string // human detail, e.g. "live holder did not release within 30s"
	Err    error
}

// Error names the operation, the lane and file, the cause and the reason.
func (e *Error) Error() string {
	msg := "cleolease: " + e.Op
	if e.Scope != "" || e.Lane != "" {
		msg += fmt.Sprintf(" %s/%s", e.Scope, e.Lane)
	}
	if e.Path != "" {
		msg += " on " + e.Path
	}
	msg += ": " + e.Err.Error()
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// Unwrap returns the cause (see Error).
func (e *Error) Unwrap() error { return e.Err }
