// Package mattn is the go-sqlite3 base (github.com/mattn/go-sqlite3): the
// sqlbase.Base the root package opens the lease engine with, and the reader
// of go-sqlite3's errors that Code uses (registered by importing this
// package).
package mattn

import (
	"context"
	"database/sql/driver"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/callbacks"
	"github.com/cleocode/cleolease/internal/sqlbase"
)

func init() { sqlbase.RegisterErrors(ReadError) }

// ReadError returns the sqlbase.ErrorCode of the sqlite3.Error inside err's
// chain, and false when there is none.
func ReadError(err error) (sqlbase.ErrorCode, bool) {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return sqlbase.ErrorCode{}, false
	}
	return sqlbase.ErrorCode{Code: int(se.Code), Extended: int(se.ExtendedCode), Errno: se.SystemErrno, Message: se.Error(), Err: se}, true
}

// Base opens the engine's connections through one go-sqlite3 driver value.
type Base struct {
	drv *sqlite3.SQLiteDriver // never nil
}

var (
	basesMu sync.Mutex
	bases   = map[*sqlite3.SQLiteDriver]*Base{}
	plain   = &Base{drv: &sqlite3.SQLiteDriver{}}
)

// For returns the Base of drv: the same *Base for the same drv, so that two
// connectors configured with one driver share their file's engine. A nil
// drv is a plain &sqlite3.SQLiteDriver{}, the same for every caller.
func For(drv *sqlite3.SQLiteDriver) *Base {
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

// Name is "go-sqlite3".
func (b *Base) Name() string { return "go-sqlite3" }

// Key is the driver value.
func (b *Base) Key() any { return b.drv }

// Driver returns the go-sqlite3 driver the base opens with.
func (b *Base) Driver() *sqlite3.SQLiteDriver { return b.drv }

// SQLDriver returns the go-sqlite3 driver the base opens with, as a
// driver.Driver: what the private *sql.DB of package migrate reports as
// its Driver, where a migration function may look for go-sqlite3's.
func (b *Base) SQLDriver() driver.Driver { return b.drv }

// OpenPrivate opens dsn on the base's driver, so that its ConnectHook runs
// there too (what it sets for the file, such as
// SQLITE_FCNTL_PERSIST_WAL, must hold on every connection), then clears
// the callbacks the hook registered (update, commit, rollback and
// pre-update hooks, authorizer, trace: they are the application's). It
// asks go-sqlite3 to keep the engine's few statements prepared
// (_stmt_cache_size), unless dsn sets a size, and retries an open that
// fails busy (busy.RetryOpen).
func (b *Base) OpenPrivate(ctx context.Context, dsn string) (driver.Conn, error) {
	dsn = withStmtCache(dsn)
	conn, err := busy.RetryOpen(ctx, func() (driver.Conn, error) { return b.drv.Open(dsn) })
	if err != nil {
		return nil, err
	}
	sc := conn.(*sqlite3.SQLiteConn)
	if err := callbacks.Clear(sc); err != nil {
		sc.Close()
		return nil, err
	}
	return sc, nil
}

// InspectDSN returns go-sqlite3's DSN for path: mode=ro with
// _busy_timeout, or mode=ro&immutable=1.
func (b *Base) InspectDSN(path string, immutable bool, timeout time.Duration) string {
	q := "mode=ro&_busy_timeout=" + strconv.FormatInt(timeout.Milliseconds(), 10)
	if immutable {
		q = "mode=ro&immutable=1"
	}
	return sqlbase.FileURI(path, q)
}

// withStmtCache adds _stmt_cache_size=32 to dsn unless it sets a size.
func withStmtCache(dsn string) string {
	if strings.Contains(dsn, "_stmt_cache_size=") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&_stmt_cache_size=32"
	}
	return dsn + "?_stmt_cache_size=32"
}
