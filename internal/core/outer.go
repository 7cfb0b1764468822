package core

import (
	"context"
	"database/sql/driver"
)

// OuterConn is what database/sql holds: sqlmw's connection (which routes
// every call to leaseConn through the interceptor) plus the base's own
// connection (Base). It forwards every optional interface sqlmw's
// connection implements. A base's package wraps it to add its base's raw
// accessor (package cleolease's Conn.SQLiteConn).
type OuterConn struct {
	mw            driver.Conn
	inner         *leaseConn
	ownsConnector bool
}

var (
	_ driver.ConnBeginTx        = (*OuterConn)(nil)
	_ driver.ConnPrepareContext = (*OuterConn)(nil)
	_ driver.ExecerContext      = (*OuterConn)(nil)
	_ driver.QueryerContext     = (*OuterConn)(nil)
	_ driver.Pinger             = (*OuterConn)(nil)
	_ driver.SessionResetter    = (*OuterConn)(nil)
	_ driver.Validator          = (*OuterConn)(nil)
	_ driver.NamedValueChecker  = (*OuterConn)(nil)
	_ driver.Execer             = (*OuterConn)(nil) //nolint:staticcheck // forwarded for old callers
	_ driver.Queryer            = (*OuterConn)(nil) //nolint:staticcheck
	_ driver.ConnBeginTx        = (*leaseConn)(nil)
	_ driver.ExecerContext      = (*leaseConn)(nil)
	_ driver.QueryerContext     = (*leaseConn)(nil)
	_ driver.ConnPrepareContext = (*leaseConn)(nil)
	_ driver.SessionResetter    = (*leaseConn)(nil)
	_ driver.Validator          = (*leaseConn)(nil)
	_ driver.StmtExecContext    = (*leaseStmt)(nil)
	_ driver.StmtQueryContext   = (*leaseStmt)(nil)
)

// Base returns the base's own connection. Statements run directly on it
// bypass the writer lease and the fencing check. From then on the
// connection may carry the application's callbacks (an update hook, an
// authorizer, a trace), so no lease write runs on it for the rest of its
// life: its turns hand off and claim on the engine's own connection
// (leaseConn.passInCommit).
func (c *OuterConn) Base() driver.Conn {
	c.inner.exposed.Store(true)
	return c.inner.Conn
}

// OwnConnector makes Close close the connection's connector too: for a
// connection opened by a driver's Open, which made a connector for it.
func (c *OuterConn) OwnConnector() { c.ownsConnector = true }

func (c *OuterConn) Prepare(query string) (driver.Stmt, error) { return c.mw.Prepare(query) }
func (c *OuterConn) Begin() (driver.Tx, error)                 { return c.mw.Begin() } //nolint:staticcheck

func (c *OuterConn) Close() error {
	err := c.mw.Close()
	if c.ownsConnector {
		c.inner.c.Close()
	}
	return err
}

func (c *OuterConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.mw.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *OuterConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.mw.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *OuterConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.mw.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *OuterConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.mw.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *OuterConn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return c.mw.(driver.Execer).Exec(query, args) //nolint:staticcheck
}

func (c *OuterConn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return c.mw.(driver.Queryer).Query(query, args) //nolint:staticcheck
}

func (c *OuterConn) Ping(ctx context.Context) error { return c.mw.(driver.Pinger).Ping(ctx) }

func (c *OuterConn) ResetSession(ctx context.Context) error {
	return c.mw.(driver.SessionResetter).ResetSession(ctx)
}

func (c *OuterConn) IsValid() bool { return c.mw.(driver.Validator).IsValid() }

func (c *OuterConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.mw.(driver.NamedValueChecker).CheckNamedValue(nv)
}
