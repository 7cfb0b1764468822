// Package base is the github.com/ncruces/go-sqlite3 base: the
// sqlbase.Base that the lease engine (package lease) opens its private
// connection with when the application's connections come from ncruces's
// database/sql driver (its package driver), the sqlbase.Driver that opens
// those connections, and the reader of ncruces's errors that sqlbase.Code
// uses (registered by importing this package). It is cgo-free: ncruces
// runs SQLite compiled to WebAssembly and translated to Go.
//
// ncruces's driver is configured by callbacks, not by a driver value:
// driver.Open(dsn, init, term) runs init on each new connection and term
// when it closes. A Base carries the application's Callbacks and runs them
// on the application's connections only; the engine's private connection
// runs none of them (see Base.OpenPrivate).
package base

import (
	"context"
	"database/sql/driver"
	"strconv"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"
	ncdriver "github.com/ncruces/go-sqlite3/driver"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/sqlbase"
)

// Callbacks are what ncruces's driver.Open takes beside the DSN: Init runs
// on each new connection, after the DSN's _pragma values, and Term when
// the connection closes (through SQLite's close trace event, as ncruces
// does). Either may be nil.
type Callbacks struct {
	Init, Term func(*sqlite3.Conn) error
}

// Base opens connections for applications whose connections run one
// Callbacks value.
type Base struct {
	cb *Callbacks // nil: no callbacks
}

var (
	basesMu sync.Mutex
	bases   = map[*Callbacks]*Base{}
)

// For returns the Base of cb (nil for none): the same *Base for the same
// cb, so that two connectors configured with one Callbacks value share
// their file's engine.
func For(cb *Callbacks) *Base {
	basesMu.Lock()
	defer basesMu.Unlock()
	b := bases[cb]
	if b == nil {
		b = &Base{cb: cb}
		bases[cb] = b
	}
	return b
}

// Name is "ncruces".
func (b *Base) Name() string { return "ncruces" }

// Key is the application's Callbacks pointer (nil for none).
func (b *Base) Key() any { return b.cb }

// Callbacks returns the application's callbacks, nil for none.
func (b *Base) Callbacks() *Callbacks { return b.cb }

// OpenPrivate opens dsn, in ncruces's DSN dialect, with ncruces's driver
// and none of the application's callbacks: what dsn sets (its _pragma
// values, applied in their order, with a _pragma=busy_timeout moved first
// so that a journal_mode(WAL) on a fresh file waits for locks) applies as on
// the application's connections; what Init does does not. Extensions
// registered with sqlite3.AutoExtension run on it, as on every connection
// of the process.
//
// An open that fails busy (several processes switching one fresh file to
// WAL at once) is retried (busy.RetryOpen) until ctx ends, when ctx.Err()
// is returned. Other errors are ncruces's own. ncruces keeps no prepared
// statements between uses.
func (b *Base) OpenPrivate(ctx context.Context, dsn string) (driver.Conn, error) {
	dsn = sqlbase.BusyFirst(dsn)
	return busy.RetryOpen(ctx, func() (driver.Conn, error) {
		c, err := connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}

// connect opens dsn with ncruces's driver, no callbacks run.
func connect(ctx context.Context, dsn string) (*Conn, error) {
	ctor, err := (&ncdriver.SQLite{}).OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	dc, err := ctor.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return wrap(dc), nil
}

// InspectDSN returns ncruces's DSN for path: a file: URI (ncruces reads
// parameters only from one) with mode=ro and
// _pragma=busy_timeout(timeout in milliseconds), or mode=ro&immutable=1.
func (b *Base) InspectDSN(path string, immutable bool, timeout time.Duration) string {
	q := "mode=ro&_pragma=busy_timeout(" + strconv.FormatInt(timeout.Milliseconds(), 10) + ")"
	if immutable {
		q = "mode=ro&immutable=1"
	}
	return sqlbase.FileURI(path, q)
}
