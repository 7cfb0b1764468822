package cleolease

// The outer connection: what database/sql holds and hands to sql.Conn.Raw.

import (
	"context"
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"
)

// Conn is implemented by the value sql.Conn.Raw passes to its callback:
//
//	conn, err := db.Conn(ctx)
//	if err != nil {
//		return err
//	}
//	defer conn.Close()
//	err = conn.Raw(func(dc any) error {
//		sc := dc.(cleolease.Conn).SQLiteConn()
//		return sc.RegisterFunc("twice", func(x int) int { return 2 * x }, true)
//	})
//
// Statements run directly on the *sqlite3.SQLiteConn bypass the writer
// lease and the fencing check.
type Conn interface {
	driver.Conn
	SQLiteConn() *sqlite3.SQLiteConn
}

// outerConn is what database/sql holds: sqlmw's connection (which routes
// every call to leaseConn through the interceptor) plus Raw access. It
// forwards every optional interface sqlmw's connection implements.
type outerConn struct {
	mw            driver.Conn
	inner         *leaseConn
	ownsConnector bool
}

var (
	_ Conn                      = (*outerConn)(nil)
	_ driver.ConnBeginTx        = (*outerConn)(nil)
	_ driver.ConnPrepareContext = (*outerConn)(nil)
	_ driver.ExecerContext      = (*outerConn)(nil)
	_ driver.QueryerContext     = (*outerConn)(nil)
	_ driver.Pinger             = (*outerConn)(nil)
	_ driver.SessionResetter    = (*outerConn)(nil)
	_ driver.Validator          = (*outerConn)(nil)
	_ driver.NamedValueChecker  = (*outerConn)(nil)
	_ driver.Execer             = (*outerConn)(nil) //nolint:staticcheck // forwarded for old callers
	_ driver.Queryer            = (*outerConn)(nil) //nolint:staticcheck
	_ driver.ConnBeginTx        = (*leaseConn)(nil)
	_ driver.ExecerContext      = (*leaseConn)(nil)
	_ driver.QueryerContext     = (*leaseConn)(nil)
	_ driver.ConnPrepareContext = (*leaseConn)(nil)
	_ driver.SessionResetter    = (*leaseConn)(nil)
	_ driver.Validator          = (*leaseConn)(nil)
	_ driver.StmtExecContext    = (*leaseStmt)(nil)
	_ driver.StmtQueryContext   = (*leaseStmt)(nil)
)

// SQLiteConn returns the native go-sqlite3 connection.
func (c *outerConn) SQLiteConn() *sqlite3.SQLiteConn { return c.inner.Conn.(*sqlite3.SQLiteConn) }

func (c *outerConn) Prepare(query string) (driver.Stmt, error) { return c.mw.Prepare(query) }
func (c *outerConn) Begin() (driver.Tx, error)                 { return c.mw.Begin() } //nolint:staticcheck

func (c *outerConn) Close() error {
	err := c.mw.Close()
	if c.ownsConnector {
		c.inner.c.Close()
	}
	return err
}

func (c *outerConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.mw.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *outerConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.mw.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *outerConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.mw.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *outerConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.mw.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *outerConn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return c.mw.(driver.Execer).Exec(query, args) //nolint:staticcheck
}

func (c *outerConn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return c.mw.(driver.Queryer).Query(query, args) //nolint:staticcheck
}

func (c *outerConn) Ping(ctx context.Context) error { return c.mw.(driver.Pinger).Ping(ctx) }

func (c *outerConn) ResetSession(ctx context.Context) error {
	return c.mw.(driver.SessionResetter).ResetSession(ctx)
}

func (c *outerConn) IsValid() bool { return c.mw.(driver.Validator).IsValid() }

func (c *outerConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.mw.(driver.NamedValueChecker).CheckNamedValue(nv)
}
