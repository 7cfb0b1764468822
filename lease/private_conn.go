package lease

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync/atomic"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// leaseConnector opens the engine's private connection on the base
// (sqlbase.Base.OpenPrivate: never through cleolease, without the
// application's callbacks) with busy_timeout 0.
type leaseConnector struct {
	dsn      string
	base     sqlbase.Base
	readOnly bool // keep the DSN's busy timeout; for inspection only

	changes atomic.Int64 // connections opened plus connections closed
	open    atomic.Int64 // connections open now
}

// pin reports a number that stays the same for as long as the connector's
// connections stay the same (none opened, none closed since), and whether
// exactly one is open: the one the engine keeps for its whole life
// (MaxOpenConns 1, MaxIdleConns 1, no lifetime; a base returns
// driver.ErrBadConn only for a connection already closed). Engine.checkFile
// relies on it on Windows.
func (c *leaseConnector) pin() (gen int64, open bool) {
	return c.changes.Load(), c.open.Load() == 1
}

// trackedConn is a base's connection whose Close the connector counts
// (see pin). It passes on the context-taking interfaces database/sql
// uses; a base's connection implements each of them (go-sqlite3,
// modernc and ncruces do).
type trackedConn struct {
	driver.Conn
	c      *leaseConnector
	closed atomic.Bool
}

var (
	_ driver.ExecerContext      = (*trackedConn)(nil)
	_ driver.QueryerContext     = (*trackedConn)(nil)
	_ driver.ConnPrepareContext = (*trackedConn)(nil)
	_ driver.ConnBeginTx        = (*trackedConn)(nil)
)

func (t *trackedConn) Close() error {
	if !t.closed.Swap(true) {
		t.c.open.Add(-1)
		t.c.changes.Add(1)
	}
	return t.Conn.Close()
}

func (t *trackedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return t.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (t *trackedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return t.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (t *trackedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return t.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (t *trackedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return t.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *leaseConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.OpenPrivate(ctx, c.dsn)
	if err != nil {
		return nil, err
	}
	for _, need := range []bool{implements[driver.ExecerContext](conn), implements[driver.QueryerContext](conn),
		implements[driver.ConnPrepareContext](conn), implements[driver.ConnBeginTx](conn)} {
		if !need {
			conn.Close()
			return nil, fmt.Errorf("lease: the %s connection lacks a context method database/sql needs", c.base.Name())
		}
	}
	if !c.readOnly {
		if _, err := conn.(driver.ExecerContext).ExecContext(ctx, "PRAGMA busy_timeout = 0", nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	c.open.Add(1)
	c.changes.Add(1)
	return &trackedConn{Conn: conn, c: c}, nil
}

// implements reports whether v implements I.
func implements[I any](v any) bool {
	_, ok := v.(I)
	return ok
}

// Driver is a driver.Driver that opens through Connect (database/sql
// calls it only through the Connector).
func (c *leaseConnector) Driver() driver.Driver { return connectorDriver{c} }

// connectorDriver is the driver.Driver of a leaseConnector.
type connectorDriver struct{ c *leaseConnector }

func (d connectorDriver) Open(string) (driver.Conn, error) { return d.c.Connect(context.Background()) }
