package lease

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync/atomic"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/callbacks"
	"github.com/mattn/go-sqlite3"
)

// withStmtCache asks go-sqlite3 to keep the engine's few statements
// prepared (_stmt_cache_size), unless the DSN already sets a size.
func withStmtCache(dsn string) string {
	if strings.Contains(dsn, "_stmt_cache_size=") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&_stmt_cache_size=32"
	}
	return dsn + "?_stmt_cache_size=32"
}

// leaseConnector opens the engine's private connection on the raw
// go-sqlite3 driver (never through cleolease) with busy_timeout 0 and
// without the callbacks the driver's ConnectHook registered.
type leaseConnector struct {
	dsn      string
	drv      *sqlite3.SQLiteDriver // nil: a plain go-sqlite3 driver
	readOnly bool                  // keep the DSN's busy timeout; for inspection only

	changes atomic.Int64 // connections opened plus connections closed
	open    atomic.Int64 // connections open now
}

// pin reports a number that stays the same for as long as the connector's
// connections stay the same (none opened, none closed since), and whether
// exactly one is open: the one the engine keeps for its whole life
// (MaxOpenConns 1, MaxIdleConns 1, no lifetime; go-sqlite3 returns
// driver.ErrBadConn only for a connection already closed). Engine.checkFile
// relies on it on Windows.
func (c *leaseConnector) pin() (gen int64, open bool) {
	return c.changes.Load(), c.open.Load() == 1
}

// trackedConn is a go-sqlite3 connection whose Close the connector counts
// (see pin).
type trackedConn struct {
	*sqlite3.SQLiteConn
	c      *leaseConnector
	closed atomic.Bool
}

func (t *trackedConn) Close() error {
	if !t.closed.Swap(true) {
		t.c.open.Add(-1)
		t.c.changes.Add(1)
	}
	return t.SQLiteConn.Close()
}

func (c *leaseConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := busy.RetryOpen(ctx, func() (driver.Conn, error) { return c.Driver().Open(c.dsn) })
	if err != nil {
		return nil, err
	}
	sc := conn.(*sqlite3.SQLiteConn)
	if err := callbacks.Clear(sc); err != nil {
		sc.Close()
		return nil, err
	}
	if !c.readOnly {
		if _, err := sc.Exec("PRAGMA busy_timeout = 0", nil); err != nil {
			sc.Close()
			return nil, err
		}
	}
	c.open.Add(1)
	c.changes.Add(1)
	return &trackedConn{SQLiteConn: sc, c: c}, nil
}

// Driver is the connector's base driver: the one the engine was opened
// with (Options.Driver), so that its ConnectHook runs here too (what it
// sets for the file, such as SQLITE_FCNTL_PERSIST_WAL, must hold on every
// connection). Connect then clears the hook's callbacks (update, commit,
// rollback and pre-update hooks, authorizer, trace): they are the
// application's, and must neither see nor veto the engine's bookkeeping.
func (c *leaseConnector) Driver() driver.Driver {
	if c.drv != nil {
		return c.drv
	}
	return &sqlite3.SQLiteDriver{}
}
