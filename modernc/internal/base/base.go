// Package base is the modernc.org/sqlite base: the sqlbase.Base that the
// lease engine (package lease) opens its private connection with when the
// application's connections come from modernc.org/sqlite, and the reader
// of modernc's errors that sqlbase.Code uses (registered by importing this
// package). It is cgo-free: modernc.org/sqlite is SQLite translated to Go.
//
// It is the counterpart of the go-sqlite3 base (internal/mattn in the root
// module), with one difference in what the private connection inherits
// from the application's driver: go-sqlite3's ConnectHook runs on the
// private connection and the callbacks it registered are cleared
// afterwards, whereas modernc's connection hooks (RegisterConnectionHook,
// Driver.RegisterConnectionHook) are opaque code that cannot be undone, so
// none of them runs on the private connection (see Base.OpenPrivate).
package base

import (
	"context"
	"database/sql/driver"
	"errors"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/sqlbase"
)

func init() { sqlbase.RegisterErrors(ReadError) }

// ReadError returns the sqlbase.ErrorCode of the *sqlite.Error inside
// err's chain, and false when there is none.
//
// modernc turns SQLite's extended result codes on for every connection it
// opens, so (*sqlite.Error).Code is the extended code (SQLITE_IOERR_WRITE
// is 778) and the primary code is its low byte. The message is the error's
// text ("SQL logic error: no such table: t (1)").
//
// Errno is always 0: a *sqlite.Error carries only the result code and the
// message, and SQLite's sqlite3_system_errno is not reachable through
// modernc.org/sqlite's exported API (the connection's sqlite3 handle is an
// unexported field). So over this base sqlbase.WriteRefused recognises
// SQLITE_READONLY (a file opened read-only) but not a LiteFS replica's
// refusal of a write, which SQLite reports as SQLITE_IOERR_WRITE with the
// system errno EACCES: that reads as an ordinary I/O error, so lease.Open
// fails on a replica whose file lacks the lease tables instead of
// deferring their creation, and a withdrawn claim retries the refused
// write as transient (lease/refused.go, lease/engine.go, lease/abandon.go).
func ReadError(err error) (sqlbase.ErrorCode, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) || se == nil {
		return sqlbase.ErrorCode{}, false
	}
	return sqlbase.ErrorCode{Code: se.Code() & 0xff, Extended: se.Code(), Message: se.Error(), Err: se}, true
}

// Base opens the engine's connections for applications whose connections
// come from one modernc.org/sqlite driver value.
type Base struct {
	drv *sqlite.Driver // the application's driver; never nil
}

var (
	basesMu sync.Mutex
	bases   = map[*sqlite.Driver]*Base{}

	// private opens every Base's private connections: a driver on which
	// nothing is ever registered, so that no connection hook, function or
	// collation of the application's runs there. modernc's package-level
	// registrations apply to the driver it registers as "sqlite" only, and
	// a Driver's own registrations to that Driver only (the type's
	// documentation in modernc.org/sqlite's driver.go); virtual table
	// modules registered at package level reach every Driver, this one
	// included.
	private = &sqlite.Driver{}
)

// For returns the Base of drv, the driver the application's connections
// are opened with: the same *Base for the same drv, so that two
// connectors configured with one driver share their file's engine. A nil
// drv is the driver modernc.org/sqlite registers as "sqlite" (the one
// sql.Open("sqlite", dsn) and sqlite.NewConnector use, carrying the
// package-level registrations).
func For(drv *sqlite.Driver) *Base {
	if drv == nil {
		drv = registered()
	}
	basesMu.Lock()
	defer basesMu.Unlock()
	b := bases[drv]
	if b == nil {
		b = &Base{drv: drv}
		bases[drv] = b
	}
	return b
}

// registered returns the driver modernc.org/sqlite registers as "sqlite".
var registered = sync.OnceValue(func() *sqlite.Driver {
	c, err := sqlite.NewConnector("")
	if err != nil { // an empty DSN has no query to reject
		panic("modernc base: sqlite.NewConnector: " + err.Error())
	}
	return c.Driver().(*sqlite.Driver)
})

// Name is "modernc".
func (b *Base) Name() string { return "modernc" }

// Key is the application's driver value.
func (b *Base) Key() any { return b.drv }

// Driver returns the application's driver: the one For was given (or the
// registered "sqlite" driver). The private connections do not come from
// it (see OpenPrivate).
func (b *Base) Driver() *sqlite.Driver { return b.drv }

// OpenPrivate opens dsn, in modernc's DSN dialect, on a driver that
// carries none of the application's registrations: no connection hook
// registered with sqlite.RegisterConnectionHook or
// Driver.RegisterConnectionHook runs on the connection, and none of the
// application's functions or collations is defined there. What dsn itself
// sets (its _pragma values, _busy_timeout, vfs, SQLite's URI parameters)
// applies as on the application's connections; a per-connection setting a
// hook of the application makes (a file control, a PRAGMA) does not.
//
// SQLite's busy timeout is the DSN's: a _pragma=busy_timeout(N) is
// applied before the DSN's other _pragma values (modernc runs them in
// their order, and _pragma=journal_mode(WAL) first would switch a fresh
// file to WAL with no busy handler), as modernc already does with its
// _busy_timeout key. An open that fails busy all the same (several
// processes switching one fresh file to WAL at once) is retried
// (busy.RetryOpen) until ctx ends, when ctx.Err() is returned. Other
// errors are modernc's own (*sqlite.Error, or its error naming a bad DSN
// parameter). modernc keeps no prepared statements between uses.
func (b *Base) OpenPrivate(ctx context.Context, dsn string) (driver.Conn, error) {
	dsn = sqlbase.BusyFirst(dsn)
	return busy.RetryOpen(ctx, func() (driver.Conn, error) { return private.Open(dsn) })
}

// InspectDSN returns modernc's DSN for path: a file: URI (modernc passes
// it whole to SQLite, which applies its mode and immutable parameters)
// with mode=ro and _pragma=busy_timeout(timeout in milliseconds), or
// mode=ro&immutable=1.
func (b *Base) InspectDSN(path string, immutable bool, timeout time.Duration) string {
	q := "mode=ro&_pragma=busy_timeout(" + strconv.FormatInt(timeout.Milliseconds(), 10) + ")"
	if immutable {
		q = "mode=ro&immutable=1"
	}
	return sqlbase.FileURI(path, q)
}
