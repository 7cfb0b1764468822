// Package sqlbase is what cleolease needs from a Go SQLite driver (a base:
// github.com/mattn/go-sqlite3, modernc.org/sqlite, ncruces/go-sqlite3),
// said without importing any of them: the lease engine (package lease) and
// every other base-free package talk to SQLite through a Base and read
// SQLite's errors through Code.
//
// Each base's package implements Base and registers, when it is
// initialised, how to read its error type (RegisterErrors), so that Code
// understands an error from any base linked into the program.
package sqlbase

import (
	"context"
	"database/sql/driver"
	"sync"
	"syscall"
	"time"
)

// SQLite's primary result codes that cleolease tells apart
// (sqlite.org/rescode.html).
const (
	Error     = 1  // SQLITE_ERROR: a generic error (no such table, syntax)
	Busy      = 5  // SQLITE_BUSY
	Locked    = 6  // SQLITE_LOCKED
	ReadOnly  = 8  // SQLITE_READONLY
	Interrupt = 9  // SQLITE_INTERRUPT: sqlite3_interrupt, as a base's context watcher calls it
	IOErr     = 10 // SQLITE_IOERR
	Full      = 13 // SQLITE_FULL
	Protocol  = 15 // SQLITE_PROTOCOL
)

// ErrorCode is SQLite's report of one error, as a base returns it.
type ErrorCode struct {
	// Code is the primary result code (Busy, IOErr, …).
	Code int
	// Extended is the extended result code (SQLITE_IOERR_WRITE is 778),
	// or Code when the base reports none.
	Extended int
	// Errno is the system error number behind an I/O error (EACCES for a
	// write a LiteFS replica refuses), or 0 when the base does not report
	// one.
	Errno syscall.Errno
	// Message is SQLite's message ("no such table: t").
	Message string
	// Err is the base's own error value found in the chain (go-sqlite3's
	// sqlite3.Error, modernc's *sqlite.Error), as the base returned it.
	Err error
}

// Base opens SQLite connections for cleolease's own statements on one Go
// driver. Its methods are safe for concurrent use.
type Base interface {
	// Name names the base in errors and logs: "go-sqlite3", "modernc",
	// "ncruces".
	Name() string
	// OpenPrivate opens a connection to dsn (in this base's DSN dialect)
	// for cleolease's own statements: whatever the base runs on every
	// connection of the application's (extensions, a hook's file controls)
	// runs on it too, but no callback the application registered (update,
	// commit or pre-update hooks, authorizer, trace) stays on it, and
	// SQLite's busy timeout is the DSN's. It may keep its statements
	// prepared between uses.
	OpenPrivate(ctx context.Context, dsn string) (driver.Conn, error)
	// InspectDSN returns a DSN that opens the database file path (a
	// resolved file name) read-only, with SQLite's busy timeout timeout, or
	// as an immutable file (SQLite's immutable=1, no locks taken) when
	// immutable is true.
	InspectDSN(path string, immutable bool, timeout time.Duration) string
	// Key is a comparable value that is the same for two Bases exactly
	// when they open connections the same way (the same configured driver
	// value): a process's engine of one file serves only one Key.
	Key() any
	// Locking is the kind of file lock the base's SQLite takes on the
	// database (Locking): what this process announces beside the database,
	// so that a process whose locks would not exclude its own is refused.
	Locking() Locking
}

var (
	readersMu sync.RWMutex
	readers   []func(error) (ErrorCode, bool)
)

// RegisterErrors adds read to the ways Code reads an error: read reports
// the ErrorCode of the base's own error value inside err's chain (found
// with errors.As), and false when the chain holds none. A base's package
// calls it from its init function.
func RegisterErrors(read func(err error) (ErrorCode, bool)) {
	readersMu.Lock()
	defer readersMu.Unlock()
	readers = append(readers, read)
}

// Code returns SQLite's ErrorCode of the error of any registered base inside
// err's chain, and false when there is none (err is nil, or not SQLite's).
func Code(err error) (ErrorCode, bool) {
	if err == nil {
		return ErrorCode{}, false
	}
	readersMu.RLock()
	defer readersMu.RUnlock()
	for _, read := range readers {
		if c, ok := read(err); ok {
			return c, true
		}
	}
	return ErrorCode{}, false
}

// IsBusy reports whether err is (or wraps) SQLite's SQLITE_BUSY or
// SQLITE_LOCKED, from any registered base.
func IsBusy(err error) bool {
	c, ok := Code(err)
	return ok && (c.Code == Busy || c.Code == Locked)
}

// WriteRefused reports whether err (anywhere in its chain) is SQLite's
// report that the file refused a write: SQLITE_READONLY, or an
// SQLITE_IOERR whose system errno is EACCES, EPERM or EROFS (a LiteFS
// replica refuses writes with EACCES).
func WriteRefused(err error) bool {
	c, ok := Code(err)
	if !ok {
		return false
	}
	switch c.Code {
	case ReadOnly:
		return true
	case IOErr:
		return c.Errno == syscall.EACCES || c.Errno == syscall.EPERM || c.Errno == syscall.EROFS
	}
	return false
}
