package lease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A process that writes once and exits — a CLI command — pays for the
// engine's private connection more than for its own transaction: a second
// SQLite connection parses the schema again and fills a page cache and
// lookaside of its own. So while that connection is not open, the engine
// runs its statements (the sweep at the first Acquire, the claim, the
// release when the application's last connection closes) on a connection
// the application lends it: the idle connection its write is about to
// begin on, lent for the length of Acquire (or of ReleaseIdle). A Loan
// carries it in the context; the engine uses it for one statement
// sequence at a time (take, give), with SQLite's busy timeout at 0 as on
// its own connection (its waits are its own, in Go), and never after
// Return, which puts the connection's busy timeout back.
//
// Only a connection no callback of the application's watches may be lent
// (the lease rows would reach an update hook, an authorizer or a trace):
// the caller decides, as it does for a grant written inside its commit.

// Loan is a connection of the application's lent to the engine until
// Return. Its methods are safe for concurrent use.
type Loan struct {
	conn driver.Conn

	mu       sync.Mutex // held from take to give; Return takes it
	returned bool
	db       *sql.DB // over conn (lentConnector), made at the first take
	busyMS   int64   // conn's busy timeout (ms) before the first take
	zeroed   bool    // the busy timeout is 0 until Return
	err      error   // Return's: the busy timeout could not be put back
}

// loanKey is the context key of a *Loan.
type loanKey struct{}

// Lend returns ctx carrying a Loan of conn, which must be idle (no
// transaction open) and stay unused by its owner until Return; conn must
// implement driver.ExecerContext, driver.QueryerContext,
// driver.ConnPrepareContext and driver.ConnBeginTx (every base's does).
func Lend(ctx context.Context, conn driver.Conn) (context.Context, *Loan) {
	ln := &Loan{conn: conn}
	return context.WithValue(ctx, loanKey{}, ln), ln
}

// loanFrom returns the Loan ctx carries, or nil.
func loanFrom(ctx context.Context) *Loan {
	ln, _ := ctx.Value(loanKey{}).(*Loan)
	return ln
}

// Return ends the loan: it waits for a statement sequence in progress,
// then puts the connection's busy timeout back. An error means it could
// not: the connection should be discarded (driver.ErrBadConn). Later
// calls return the same result.
func (ln *Loan) Return() error {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.returned {
		return ln.err
	}
	ln.returned = true
	if ln.db != nil {
		ln.db.Close() // (lentConn.Close leaves conn open)
	}
	if ln.zeroed {
		if _, err := ln.conn.(driver.ExecerContext).ExecContext(context.Background(), fmt.Sprintf("PRAGMA busy_timeout = %d", ln.busyMS), nil); err != nil {
			ln.err = fmt.Errorf("lease: the lent connection's busy timeout was not restored: %w", err)
		}
	}
	return ln.err
}

// take returns the lent connection for one statement sequence, to be
// handed back with give; false once returned, or when the connection
// cannot be prepared (the engine then uses its own).
func (ln *Loan) take(ctx context.Context) (*sql.Conn, bool) {
	ln.mu.Lock()
	if ln.returned {
		ln.mu.Unlock()
		return nil, false
	}
	if ln.db == nil {
		if err := ln.zeroBusy(ctx); err != nil {
			ln.mu.Unlock()
			return nil, false
		}
		ln.db = sql.OpenDB(lentConnector{ln.conn})
		ln.db.SetMaxOpenConns(1)
		ln.db.SetMaxIdleConns(1)
	}
	c, err := ln.db.Conn(ctx)
	if err != nil {
		ln.mu.Unlock()
		return nil, false
	}
	return c, true
}

// give ends the statement sequence take began.
func (ln *Loan) give(c *sql.Conn) {
	c.Close()
	ln.mu.Unlock()
}

// zeroBusy reads the connection's busy timeout and sets it to 0.
func (ln *Loan) zeroBusy(ctx context.Context) error {
	q, ok1 := ln.conn.(driver.QueryerContext)
	x, ok2 := ln.conn.(driver.ExecerContext)
	if !ok1 || !ok2 {
		return errors.New("lease: the lent connection lacks QueryContext or ExecContext")
	}
	rows, err := q.QueryContext(ctx, "PRAGMA busy_timeout", nil)
	if err != nil {
		return err
	}
	dest := make([]driver.Value, 1)
	err = rows.Next(dest)
	rows.Close()
	if err != nil {
		if err == io.EOF {
			err = errors.New("lease: PRAGMA busy_timeout returned no row")
		}
		return err
	}
	ms, ok := dest[0].(int64)
	if !ok {
		return fmt.Errorf("lease: PRAGMA busy_timeout returned %T", dest[0])
	}
	if _, err := x.ExecContext(ctx, "PRAGMA busy_timeout = 0", nil); err != nil {
		return err
	}
	ln.busyMS, ln.zeroed = ms, true
	return nil
}

// opConn returns a connection for one of the engine's statement sequences
// and the function that ends it: ctx's Loan while the engine's own
// connection is not open (see Loan), else that connection.
func (e *Engine) opConn(ctx context.Context) (*sql.Conn, func(), error) {
	if ln := loanFrom(ctx); ln != nil && e.conn != nil && e.conn.open.Load() == 0 {
		if c, ok := ln.take(ctx); ok {
			return c, func() { ln.give(c) }, nil
		}
	}
	c, err := e.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { c.Close() }, nil
}

// lentConnector hands database/sql the lent connection (lentConn).
type lentConnector struct{ conn driver.Conn }

func (l lentConnector) Connect(context.Context) (driver.Conn, error) { return lentConn{l.conn}, nil }
func (l lentConnector) Driver() driver.Driver                        { return lentDriver{l} }

// lentDriver is the driver.Driver of a lentConnector.
type lentDriver struct{ l lentConnector }

func (d lentDriver) Open(string) (driver.Conn, error) { return d.l.Connect(context.Background()) }

// lentConn is the lent connection as database/sql holds it: its owner
// closes it, not database/sql.
type lentConn struct{ driver.Conn }

var (
	_ driver.ExecerContext      = lentConn{}
	_ driver.QueryerContext     = lentConn{}
	_ driver.ConnPrepareContext = lentConn{}
	_ driver.ConnBeginTx        = lentConn{}
	_ driver.SessionResetter    = lentConn{}
	_ driver.Validator          = lentConn{}
)

func (c lentConn) Close() error                       { return nil }
func (c lentConn) ResetSession(context.Context) error { return nil }
func (c lentConn) IsValid() bool                      { return true }
func (c lentConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}
func (c lentConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}
func (c lentConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}
func (c lentConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}
