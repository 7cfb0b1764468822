package core

// LiteFS replicas. On a LiteFS replica the database opens read-write,
// reads work, and every write is refused by LiteFS with EACCES, which
// SQLite reports as "disk I/O error: permission denied"
// (SQLITE_IOERR_WRITE). The driver does not ask LiteFS before each write
// (a FUSE round trip per write): it translates the refusal after the
// fact, reading the mount's .primary file once, into a *ReplicaError that
// names the primary. The lease engine opens on a replica without creating
// its tables (lease.WriteRefused), so nothing is written at open.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"

	"github.com/cleocode/cleolease/lease"
)

// primaryFile is the file in a LiteFS mount that names the primary; it
// exists only on a replica connected to a primary.
const primaryFile = ".primary"

// readPrimary reads the primary's name from the .primary file of the
// LiteFS mount dir: ok is false when the file does not exist (this node is
// the primary, or connected to none) or cannot be read. It is a variable so
// that tests can give a mount's answer.
var readPrimary = func(dir string) (primary string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, primaryFile))
	if err != nil {
		return "", false
	}
	return string(bytes.TrimSpace(b)), true
}

// replicaError turns err into a *ReplicaError when it is SQLite's report
// of a refused write (lease.WriteRefused) on a database in a LiteFS mount
// whose node is not the primary: the mount has a .primary file, or the
// connector found the database on LiteFS (checkFileSystem). Any other
// error comes back unchanged. It reads .primary only on that failure path.
//
// An ErrSidecarDir from the proof of a derived sidecar directory is a
// replica's refusal too when the mount has a .primary file: on a replica
// whose primary runs on the same host, the nonce the primary recorded
// during this boot is not the one the replica's processes derived (another
// mount path), and the proof refuses before any write is tried. The
// remedy it names (_lease_sidecar_dir) would not make the replica take the
// write, so the *ReplicaError (wrapping the lease error) is returned.
func (c *Connector) replicaError(err error) error {
	if err == nil {
		return err
	}
	var re *ReplicaError
	if errors.As(err, &re) {
		return err
	}
	dir := databaseDir(c.path)
	if errors.Is(err, ErrSidecarDir) {
		c.mu.Lock()
		onLiteFS := c.liteFS
		c.mu.Unlock()
		if !onLiteFS {
			return err
		}
		if primary, ok := readPrimary(dir); ok {
			return &ReplicaError{Path: c.path, Primary: primary, Err: err}
		}
		return err
	}
	if !lease.WriteRefused(err) {
		return err
	}
	primary, ok := readPrimary(dir)
	if !ok {
		c.mu.Lock()
		onLiteFS := c.liteFS
		c.mu.Unlock()
		if !onLiteFS {
			return err
		}
	}
	return &ReplicaError{Path: c.path, Primary: primary, Err: innermostSQLite(err)}
}

// innermostSQLite returns the base's error inside err (SQLite's refusal,
// without the lease engine's wrapping), or err itself.
func innermostSQLite(err error) error {
	if se := sqliteFileError(err); se != err {
		return se
	}
	return err
}

// writeErr is what a failed leased write returns: a *ReplicaError for a
// refusal on a LiteFS replica, else SQLite's file-level errors unwrapped
// (sqliteFileError), else err.
func (c *Connector) writeErr(err error) error {
	if err == nil {
		return nil
	}
	if rerr := c.replicaError(err); rerr != err {
		return rerr
	}
	return sqliteFileError(err)
}
