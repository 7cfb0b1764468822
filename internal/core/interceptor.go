package core

// The sqlmw layer. cleolease is a driver that sqlmw (github.com/ngrok/sqlmw)
// wraps: sqlmw.Driver(innerDriver, interceptor) is the driver each
// Connector opens connections through. In one sentence each:
//
//   - innerDriver opens a go-sqlite3 connection and returns it as a
//     leaseConn, the connection that decides and runs leased writes;
//   - interceptor is what sqlmw calls around every call: here it hands the
//     opened leaseConn back to Connector.Connect (sqlmw hides it behind an
//     unexported wrapper; the context carries a connSlot for it), refuses
//     the isolation levels SQLite lacks in BeginTx, and checks the
//     database file's identity on Ping — the checks that need no
//     connection's state.
//
// The lease itself is not decided in the interceptor: sqlmw hands its Conn
// and Stmt interceptors a per-call wrapper, not the leaseConn, and
// database/sql's pre-context paths bypass the interceptor, so leaseConn is
// where every call path converges.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/ngrok/sqlmw"
)

// innerDriver is the driver sqlmw wraps: it opens the base's connections
// and returns them as leaseConn, which carries the per-connection state
// (sqlmw hands interceptors a fresh wrapper on every call, so state cannot
// live there).
type innerDriver struct{ c *Connector }

func (d *innerDriver) Open(dsn string) (driver.Conn, error) {
	sc, readOnly, used, err := d.c.openSQLite(dsn)
	if err != nil {
		return nil, err
	}
	return &leaseConn{Conn: sc, c: d.c, readOnly: readOnly, dsn: used}, nil
}

// interceptor is cleolease's sqlmw interceptor. The lease work itself lives
// in leaseConn, where every call path (context-aware or not) converges.
// The interceptor hands the freshly opened leaseConn back to
// Connector.Connect (sqlmw hides it behind an unexported wrapper) and adds
// a file-identity check to Ping, so db.Ping reports ErrFileChanged when
// the database file was replaced.
type interceptor struct {
	sqlmw.NullInterceptor
	c *Connector
}

var _ sqlmw.Interceptor = interceptor{}

type connSlotKey struct{}

type connSlot struct{ lc *leaseConn }

func (i interceptor) ConnectorConnect(ctx context.Context, connect driver.Connector) (driver.Conn, error) {
	conn, err := connect.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if slot, ok := ctx.Value(connSlotKey{}).(*connSlot); ok {
		slot.lc, _ = conn.(*leaseConn)
	}
	return conn, nil
}

// ConnBeginTx refuses the isolation levels SQLite does not provide (it
// offers only serializable transactions), which go-sqlite3 would ignore
// (mattn/go-sqlite3#685), except on a private database, which behaves as
// with go-sqlite3. database/sql's pre-context Begin bypasses the
// interceptor, but it always asks for the default level.
func (i interceptor) ConnBeginTx(ctx context.Context, conn driver.ConnBeginTx, opts driver.TxOptions) (context.Context, driver.Tx, error) {
	if i.c.private {
		tx, err := conn.BeginTx(ctx, opts)
		return ctx, tx, err
	}
	switch sql.IsolationLevel(opts.Isolation) {
	case sql.LevelDefault, sql.LevelSerializable:
	default:
		return ctx, nil, fmt.Errorf("cleolease: isolation level %s is not supported by SQLite (use the default or Serializable)", sql.IsolationLevel(opts.Isolation))
	}
	tx, err := conn.BeginTx(ctx, opts)
	return ctx, tx, err
}

func (i interceptor) ConnPing(ctx context.Context, conn driver.Pinger) error {
	if e := i.c.Engine(); e != nil {
		if err := e.CheckFile(); err != nil {
			return err
		}
	}
	return conn.Ping(ctx)
}
