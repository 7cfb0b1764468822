// Package base is the modernc.org/sqlite base: the sqlbase.Base and
// sqlbase.Driver that cleolease opens modernc's connections with, its DSN
// dialect, and the reader of modernc's errors that sqlbase.Code uses
// (registered by importing this package). It is cgo-free.
//
// This file is a minimal stand-in for the Base of another branch, which
// replaces it on merge; the driver (driver.go) and the dialect
// (dialect.go) do not depend on more of it than Base.drv and For.
package base

import (
	"context"
	"database/sql/driver"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

func init() {
	sqlbase.RegisterErrors(func(err error) (sqlbase.ErrorCode, bool) {
		var se *sqlite.Error
		if !errors.As(err, &se) || se == nil {
			return sqlbase.ErrorCode{}, false
		}
		// modernc turns extended result codes on for every connection
		// (conn.go, newConn): Code is the extended code.
		return sqlbase.ErrorCode{Code: se.Code() & 0xff, Extended: se.Code(), Message: se.Error(), Err: se}, true
	})
}

// Base opens connections through one modernc.org/sqlite driver value.
type Base struct {
	drv *sqlite.Driver // never nil
}

var (
	basesMu sync.Mutex
	bases   = map[*sqlite.Driver]*Base{}
	plain   = &Base{drv: &sqlite.Driver{}}
)

// For returns the Base of drv, the same *Base for the same drv. A nil drv
// is a fresh &sqlite.Driver{}, the same for every caller.
func For(drv *sqlite.Driver) *Base {
	if drv == nil {
		return plain
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

// Name is "modernc".
func (b *Base) Name() string { return "modernc" }

// Key is the driver value.
func (b *Base) Key() any { return b.drv }

// OpenPrivate opens dsn on a driver without the application's
// registrations.
func (b *Base) OpenPrivate(_ context.Context, dsn string) (driver.Conn, error) {
	return plain.drv.Open(dsn)
}

// InspectDSN returns a read-only file: URI of path, or an immutable one.
func (b *Base) InspectDSN(path string, immutable bool, timeout time.Duration) string {
	q := "mode=ro&_pragma=busy_timeout(" + strconv.FormatInt(timeout.Milliseconds(), 10) + ")"
	if immutable {
		q = "mode=ro&immutable=1"
	}
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q}
	return u.String()
}
