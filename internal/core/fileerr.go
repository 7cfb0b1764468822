package core

import (
	"errors"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// fileErrorCodes are SQLite's primary result codes that concern the
// database file as a whole rather than one statement: it cannot be opened
// (SQLITE_CANTOPEN 14, SQLITE_PERM 3, SQLITE_AUTH 23, SQLITE_NOLFS 22), is
// not a database or is corrupt (SQLITE_NOTADB 26, SQLITE_CORRUPT 11), or
// cannot be read or written (SQLITE_IOERR, SQLITE_READONLY, SQLITE_FULL,
// SQLITE_PROTOCOL, SQLITE_NOMEM 7). The user's own first statement on such
// a file meets the same error from the base.
var fileErrorCodes = map[int]bool{
	14: true, 3: true, 23: true, 22: true,
	26: true, 11: true,
	sqlbase.IOErr: true, sqlbase.ReadOnly: true, sqlbase.Full: true, sqlbase.Protocol: true,
	7: true,
}

// sqliteFileError returns the base's error inside err, unwrapped (for
// go-sqlite3 the sqlite3.Error value), when its code is one of
// fileErrorCodes; any other error comes back unchanged. The lease engine's
// own work on the file (opening its connection and creating its tables at
// the first connect, claiming a lease before a write) meets such an error
// exactly where the user's statement would have met it through the base,
// so the caller gets the same dynamic type and value (err.(sqlite3.Error)
// works), not a *LeaseError around it.
func sqliteFileError(err error) error {
	if err == nil {
		return nil
	}
	if c, ok := sqlbase.Code(err); ok && fileErrorCodes[c.Code] {
		return c.Err
	}
	return err
}

// readOnlyDBMoved is SQLITE_READONLY_DBMOVED: SQLite refused to write
// because the file it has open is no longer at its path
// (sqlite.org/rescode.html#readonly_dbmoved).
const readOnlyDBMoved = sqlbase.ReadOnly | 4<<8

// writeError is what a write's caller gets for err: the engine's
// ErrFileChanged when SQLite refused the write because the database path
// was renamed over or deleted (the file watch may not have reported it
// yet when the statement started, so the check before it passed), then
// replicaError's reading of the rest.
func (c *Connector) writeError(err error) error {
	if code, ok := sqlbase.Code(err); ok && code.Extended == readOnlyDBMoved {
		if e := c.Engine(); e != nil {
			if ferr := e.CheckFile(); ferr != nil && errors.Is(ferr, ErrFileChanged) {
				return ferr
			}
		}
	}
	return c.replicaError(err)
}
