package core

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// leaseConn is the connection under sqlmw. It embeds the base's
// connection (sqlbase.Conn), passes on the optional interfaces sqlmw
// type-asserts (Pinger, NamedValueChecker), and overrides each path that
// can write, so that the lease is taken whichever way a statement arrives.
// Every statement runs through the base's own call path (its empty
// statement and argument checks included); the driver only decides,
// beforehand, whether it needs the lease (see route).
type leaseConn struct {
	sqlbase.Conn
	c  *Connector
	tx *leaseTx // the transaction this driver began, nil when none
	// readOnly: SQLite opened the database read-only (readonly.go), so
	// writes take no lease and fail with SQLite's own error.
	readOnly bool
	dsn      string // the DSN the base opened this connection with

	classes     map[string]class       // per-connection cache of classify results
	stmtClasses map[string]class       // the same for prepared statements (stmtClass)
	fence       map[string]driver.Stmt // the fencing checks, prepared (fenceQuerier)
	closed      bool
	engine      *lease.Engine // the connector's, cached at first use
	// turn is the file's write turn this connection's write transaction
	// holds (turn.go); nil when it holds none.
	turn *lease.WriteTurn
	// exposed: the application reached the base's connection
	// (OuterConn.Base), so no lease write runs on it (passInCommit).
	exposed atomic.Bool
}

// route decides how a statement string runs on this connection: directly
// (leased false), or as a leased write. known is the class judged at
// Prepare; nil means classify query. nargs is the number of arguments. Errors: ErrForeignTransaction for a
// write inside a transaction the driver did not begin, ErrExclusiveLocking,
// ErrFileChanged, and SQLite's own error for text it cannot prepare.
func (lc *leaseConn) route(query string, known *class, nargs int) (k class, leased bool, err error) {
	if err := lc.fileCheck(); err != nil {
		return class{}, false, err
	}
	if !lc.leased() {
		return class{}, false, nil
	}
	if lc.tx != nil && lc.tx.abandoned.Load() {
		return class{}, false, errTxAbandoned
	}
	inTx := lc.tx != nil
	switch {
	case known != nil:
		k = *known
	case inTx && !mentionsLockingMode(query):
		// Inside the driver's transaction the lease is held: only a
		// locking-mode change needs a look, and the caller's own COMMIT
		// exposes a grant claimed inside it (lease.Hold.Exposing).
		lc.tx.exposing(query)
		return class{}, false, nil
	default:
		if k, err = lc.classify(query); err != nil {
			return class{}, false, err
		}
	}
	if inTx {
		lc.tx.exposing(query)
	}
	switch {
	case k.refuse != nil:
		return k, false, k.refuse
	case inTx || !k.write:
		return k, false, nil
	case nargs < k.inputs:
		// the base refuses it ("not enough args") before running
		// anything: its own error, without waiting for the lease.
		return k, false, nil
	case !lc.autoCommit():
		return k, false, ErrForeignTransaction
	}
	return k, true, nil
}

// ExecContext runs query, taking the lease first when SQLite says it may
// write. An autocommit write runs inside the driver's own BEGIN IMMEDIATE,
// fenced just before COMMIT, unless it cannot run in a transaction.
func (lc *leaseConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	k, leased, err := lc.route(query, nil, len(args))
	if err != nil {
		return nil, err
	}
	if !leased {
		return inTxGuarded(lc, func() (driver.Result, error) { return lc.Conn.ExecContext(ctx, query, args) })
	}
	return lc.leasedExec(ctx, k, func() (driver.Result, error) {
		return lc.Conn.ExecContext(ctx, query, args)
	})
}

// QueryContext runs query. A query that may write (INSERT … RETURNING,
// VACUUM, several statements) runs to completion under the lease and
// commits before QueryContext returns; its rows come back buffered.
func (lc *leaseConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	k, leased, err := lc.route(query, nil, len(args))
	if err != nil {
		return nil, err
	}
	if !leased {
		return inTxGuarded(lc, func() (driver.Rows, error) { return lc.Conn.QueryContext(ctx, query, args) })
	}
	return lc.leasedQuery(ctx, k, func() (driver.Rows, error) {
		return lc.Conn.QueryContext(ctx, query, args)
	})
}

// leasedExec runs one write statement as a leasedWrite.
func (lc *leaseConn) leasedExec(ctx context.Context, k class, run func() (driver.Result, error)) (driver.Result, error) {
	w, err := lc.startWrite(ctx, k, false)
	if err != nil {
		return nil, err
	}
	var g unwindGuard
	defer g.onUnwind(w.abandon)
	res, err := run()
	err = w.finish(err)
	g.finished()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// leasedQuery runs one write that returns rows as a leasedWrite, reading
// its rows into a buffer before the commit.
func (lc *leaseConn) leasedQuery(ctx context.Context, k class, run func() (driver.Rows, error)) (driver.Rows, error) {
	w, err := lc.startWrite(ctx, k, false)
	if err != nil {
		return nil, err
	}
	var g unwindGuard
	defer g.onUnwind(w.abandon)
	rows, err := run()
	if err != nil {
		err = w.finish(err)
		g.finished()
		return nil, err
	}
	buf, rowsErr := bufferRows(rows)
	err = w.finish(rowsErr)
	g.finished()
	if err != nil && err != rowsErr {
		if errors.Is(err, ErrLeaseLost) {
			return nil, err
		}
		// A COMMIT that fails (a deferred foreign key, a commit hook): in
		// autocommit SQLite reports it when the statement ends, after the
		// rows, which is where go-sqlite3 returns it.
		buf.err = err
	}
	return buf, nil
}

// Exec and Query are the pre-context entry points (sqlmw calls them
// directly, bypassing its interceptor); they take the same paths.
func (lc *leaseConn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return lc.ExecContext(context.Background(), query, named(args))
}

func (lc *leaseConn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return lc.QueryContext(context.Background(), query, named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// Prepare and PrepareContext return statements whose Exec and Query take
// the lease like the connection's.
func (lc *leaseConn) Prepare(query string) (driver.Stmt, error) {
	return lc.PrepareContext(context.Background(), query)
}

func (lc *leaseConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := lc.fileCheck(); err != nil {
		return nil, err
	}
	if lc.leased() && refusesLocking(query) {
		return nil, ErrExclusiveLocking
	}
	st, err := lc.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	info := lc.c.drvBase.DescribeStmt(lc.Conn, st, query)
	k := lc.stmtClass(query, info)
	return &leaseStmt{Stmt: st, lc: lc, k: k, empty: info.Empty, returning: k.write && execStepsOnce(lc.c.drvBase) && mentionsWord(query, "returning")}, nil
}

// autoCommit reports whether the connection is outside any transaction
// (sqlite3_get_autocommit).
func (lc *leaseConn) autoCommit() bool { return lc.c.drvBase.AutoCommit(lc.Conn) }

// Ping passes on the base connection's Ping; a base without one is
// always reachable.
func (lc *leaseConn) Ping(ctx context.Context) error {
	if p, ok := lc.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// CheckNamedValue passes on the base connection's argument check;
// driver.ErrSkip (database/sql's default conversion) for a base without
// one.
func (lc *leaseConn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := lc.Conn.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// leased reports whether writes on this connection take the lease: the
// connector's writes do and SQLite opened the database writable.
func (lc *leaseConn) leased() bool { return lc.c.leased() && !lc.readOnly }

// ResetSession refuses to hand out again a connection left inside a
// transaction (a hand-written BEGIN never committed): database/sql then
// discards it, which rolls that transaction back. A private database's
// connection is handed out as it is, as go-sqlite3's (which has no
// ResetSession) would be: it takes no lease, and discarding it would
// discard the database.
func (lc *leaseConn) ResetSession(ctx context.Context) error {
	if lc.c.private {
		return nil
	}
	if lc.tx != nil || !lc.autoCommit() {
		return driver.ErrBadConn
	}
	return nil
}

// fileCheck refuses every statement on a connection whose database path
// was renamed over or deleted (ErrFileChanged): with a rollback journal,
// even a read of the old file could play the new file's journal into it.
// An atomic load while inotify reports nothing about the file.
func (lc *leaseConn) fileCheck() error {
	if lc.engine == nil {
		lc.engine = lc.c.Engine()
		if lc.engine == nil {
			return nil
		}
	}
	return lc.engine.FileChanged()
}

// IsValid reports whether the connection can be reused: not closed.
func (lc *leaseConn) IsValid() bool { return !lc.closed }

// Close ends the driver's transaction, if one is open (SQLite rolls it
// back), releasing its lease, and closes the connection.
func (lc *leaseConn) Close() error {
	if lc.tx != nil {
		lc.tx.end()
	}
	for _, st := range lc.fence {
		st.Close()
	}
	lc.closed = true
	return lc.Conn.Close()
}
