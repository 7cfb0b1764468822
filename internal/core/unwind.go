package core

import (
	"context"
	"database/sql"
	"fmt"
)

// A panic (or runtime.Goexit) that unwinds through a leased write — raised
// by the base driver, a callback of the application's that SQLite runs
// inside a statement, or a driver.Valuer a base converts while binding —
// ends what the write began before it unwinds further: the driver's own
// BEGIN IMMEDIATE is rolled back and the lease released (or handed on), or,
// inside a transaction the application began, that transaction is rolled
// back and its lease released. The panic itself goes on unchanged: nothing
// here recovers it. Without this a server that recovers a handler's panic
// (net/http does) would keep the lane and SQLite's write lock for as long
// as it runs.
//
// A rolled-back transaction stays open in database/sql's eyes: every later
// statement of it fails with errTxAbandoned, and so does its Commit; its
// Rollback returns nil (the transaction is rolled back).

// errTxAbandoned is the error of a statement or Commit of a transaction
// that cleolease rolled back because a panic unwound through it. It wraps
// sql.ErrTxDone.
var errTxAbandoned = fmt.Errorf("cleolease: the transaction was rolled back when a panic unwound through one of its statements; begin a new one: %w", sql.ErrTxDone)

// unwindGuard returns the function a write path defers: it calls end
// unless finished was called first, that is when the path returns through
// a panic or runtime.Goexit rather than normally.
type unwindGuard struct{ done bool }

func (g *unwindGuard) finished() { g.done = true }

func (g *unwindGuard) onUnwind(end func()) {
	if !g.done {
		end()
	}
}

// abandon ends a write a panic is unwinding through: the driver's own
// transaction, if it opened one, is rolled back, and the lease released.
func (w *leasedWrite) abandon() {
	defer w.release()
	if w.fenced {
		w.lc.rollbackUnwinding()
	}
}

// abandon rolls back the application's transaction a panic is unwinding
// through and releases its lease; the transaction is then refused
// (errTxAbandoned) until database/sql ends it.
func (tx *leaseTx) abandon() {
	tx.abandoned.Store(true)
	tx.lc.rollbackUnwinding()
	if !tx.readOnly {
		tx.w.release()
	}
}

// rollbackUnwinding rolls back the connection's transaction while a panic
// unwinds. A second panic from the base inside that ROLLBACK is dropped so
// that the first goes on (the connection, then left inside a transaction,
// is discarded by ResetSession when database/sql takes it back).
func (lc *leaseConn) rollbackUnwinding() {
	defer func() { _ = recover() }()
	lc.Conn.ExecContext(context.Background(), "ROLLBACK", nil)
}

// inTxGuarded runs run, a statement inside the application's transaction
// (when there is one the driver began and leases), so that a panic
// unwinding through it rolls that transaction back (leaseTx.abandon).
func inTxGuarded[T any](lc *leaseConn, run func() (T, error)) (T, error) {
	tx := lc.tx
	if tx == nil || tx.readOnly {
		return run()
	}
	var g unwindGuard
	defer g.onUnwind(tx.abandon)
	v, err := run()
	g.finished()
	return v, err
}
