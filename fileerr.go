package cleolease

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

// fileErrorCodes are SQLite's primary result codes that concern the
// database file as a whole rather than one statement: it cannot be opened
// (SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH, SQLITE_NOLFS), is not a
// database or is corrupt (SQLITE_NOTADB, SQLITE_CORRUPT), or cannot be read
// or written (SQLITE_IOERR, SQLITE_READONLY, SQLITE_FULL, SQLITE_PROTOCOL,
// SQLITE_NOMEM). The user's own first statement on such a file meets the
// same error from go-sqlite3.
var fileErrorCodes = map[sqlite3.ErrNo]bool{
	sqlite3.ErrCantOpen: true, sqlite3.ErrPerm: true, sqlite3.ErrAuth: true, sqlite3.ErrNoLFS: true,
	sqlite3.ErrNotADB: true, sqlite3.ErrCorrupt: true,
	sqlite3.ErrIoErr: true, sqlite3.ErrReadonly: true, sqlite3.ErrFull: true, sqlite3.ErrProtocol: true,
	sqlite3.ErrNomem: true,
}

// sqliteFileError returns the sqlite3.Error inside err, unwrapped, when its
// code is one of fileErrorCodes; any other error comes back unchanged. The
// lease engine's own work on the file (opening its connection and creating
// its tables at the first connect, claiming a lease before a write) meets
// such an error exactly where the user's statement would have met it
// through go-sqlite3, so the caller gets the same dynamic type and value
// (err.(sqlite3.Error) works), not a *LeaseError around it.
func sqliteFileError(err error) error {
	if err == nil {
		return nil // before se, which escapes: no allocation on the hot path
	}
	var se sqlite3.Error
	if errors.As(err, &se) && fileErrorCodes[se.Code] {
		return se
	}
	return err
}
