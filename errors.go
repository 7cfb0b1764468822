package cleolease

import (
	"errors"
	"fmt"

	"github.com/cleocode/cleolease/lease"
)

// Lease errors, re-exported from package lease so that callers of the driver
// need only this package. Test them with errors.Is; read details with
// errors.As into *lease.Error (alias LeaseError).
var (
	// ErrLeaseUnavailable: no grant within _lease_wait in mode require. (The
	// cold-open lease never degrades and is bounded only by the context.)
	ErrLeaseUnavailable = lease.ErrUnavailable
	// ErrLeaseLost: a fenced commit found that its (holder, epoch) was no
	// longer active; the transaction was rolled back and changed nothing.
	ErrLeaseLost = lease.ErrLost
	// ErrFileChanged: the database path was renamed over or deleted while
	// the connector was open; writes through it are refused.
	ErrFileChanged = lease.ErrFileChanged
)

// LeaseError is the detailed form of every lease failure.
type LeaseError = lease.Error

var (
	// ErrForeignTransaction: a write that needs the lease was issued on a
	// connection inside a transaction the driver did not start (for example
	// a hand-written BEGIN on a *sql.Conn). The driver neither commits nor
	// rolls back that transaction; the caller still owns it.
	ErrForeignTransaction = errors.New("cleolease: refusing to take the writer lease inside a transaction the driver did not start")
	// ErrPrivateMemory: a private database — in memory (":memory:", or
	// mode=memory without cache=shared), or the temporary on-disk database
	// SQLite opens for an empty file name — is a different database on every
	// pooled connection, so neither a lease nor migrations mean anything.
	// Use "file::memory:?cache=shared" or a file.
	ErrPrivateMemory = errors.New("cleolease: a private database (in memory, or the temporary one an empty file name opens) differs on every pooled connection; use file::memory:?cache=shared or a file path")
	// ErrBaseDriverMismatch: a connector's Config.BaseDriver differs from
	// the one this process's lease engine of the same file was opened with
	// (by an earlier connector). The engine's private connection runs one
	// base driver's ConnectHook; use one BaseDriver per file (nil counts as
	// one).
	ErrBaseDriverMismatch = lease.ErrDriverMismatch
)

// DSNError reports a DSN parameter cleolease rejects: an unknown parameter
// it owns, an underscore parameter go-sqlite3 would silently ignore, or a
// value that does not parse. Value is empty when the name itself is the
// problem.
type DSNError struct {
	Param  string
	Value  string
	Reason string
}

func (e *DSNError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("cleolease: DSN parameter %q: %s", e.Param, e.Reason)
	}
	return fmt.Sprintf("cleolease: DSN parameter %q has bad value %q: %s", e.Param, e.Value, e.Reason)
}
