package api

import (
	"errors"
	"fmt"
)

// ErrReplica matches (errors.Is) every *ReplicaError.
var ErrReplica = errors.New("cleolease: the database is a LiteFS replica; writes go to the primary")

// ReplicaError is returned when a write (a transaction, a statement, a
// migration, AcquireLease) on a database in a LiteFS mount was refused
// because this node is a replica: LiteFS takes writes on the primary only.
// errors.Is(err, ErrReplica) holds; Unwrap gives SQLite's own error, of
// the base driver's type (go-sqlite3's sqlite3.Error: SQLITE_IOERR_WRITE
// with errno EACCES), so errors.As to that type still works (see Err for
// the one exception).
type ReplicaError struct {
	// Path is the database file.
	Path string
	// Primary is the primary node as the mount's .primary file names it
	// (LiteFS writes the primary's hostname, or its advertise URL, there);
	// empty when the mount has no .primary file: this node is not
	// connected to a primary (none elected yet, or it is between roles).
	Primary string
	// Err is the refusal SQLite returned, or, on a replica whose primary
	// runs on the same host, the lease engine's ErrSidecarDir (the proof
	// of the derived sidecar directory refused before any write).
	Err error
}

// Error names the file and the primary.
func (e *ReplicaError) Error() string {
	if e.Primary == "" {
		return fmt.Sprintf("cleolease: %s is on a LiteFS node that is not the primary (no primary connected): writes are refused (%v)", e.Path, e.Err)
	}
	return fmt.Sprintf("cleolease: %s is a LiteFS replica: writes go to the primary, %s (%v)", e.Path, e.Primary, e.Err)
}

// Is reports whether target is ErrReplica.
func (e *ReplicaError) Is(target error) bool { return target == ErrReplica }

// Unwrap returns SQLite's error.
func (e *ReplicaError) Unwrap() error { return e.Err }

// ReplicaMigrations is what the first connect does on a LiteFS replica
// whose copy of the database is behind the configured migrations, which
// cannot run there (DSN _migrations_replica).
type ReplicaMigrations string

const (
	// ReplicaOpen (default): open the database as it is, with a warning
	// naming the file, its version and the source's; reads work, and a
	// write fails with a *ReplicaError.
	ReplicaOpen ReplicaMigrations = "open"
	// ReplicaWait: wait, bounded by the connect's context, until the
	// primary's migrations have reached the replica (the version is read
	// again with a back-off from 1 ms to 250 ms), then open.
	ReplicaWait ReplicaMigrations = "wait"
)
