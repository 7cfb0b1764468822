package core

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync"
	"sync/atomic"
)

// BeginTx starts a transaction. go-sqlite3 ignores driver.TxOptions
// (mattn/go-sqlite3#685), and so does a private database (which takes no
// lease); otherwise the driver maps them itself:
//
//   - ReadOnly: no lease; a deferred BEGIN, with PRAGMA query_only=1 for the
//     transaction's duration (restored after), so a write inside it fails
//     with SQLite's "attempt to write a readonly database" instead of
//     writing without a lease.
//   - otherwise: wait for the writer lease (honouring ctx), then BEGIN
//     IMMEDIATE whatever _txlock says, so a transaction that reads and then
//     writes can never fail with SQLITE_BUSY or SQLITE_BUSY_SNAPSHOT. Commit
//     is fenced.
//
// Isolation levels other than the default and Serializable (which is what
// SQLite provides) are refused before this runs, by the interceptor
// (interceptor.go). On a connection already inside a
// transaction, SQLite's own error comes back, as from go-sqlite3.
func (lc *leaseConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if lc.c.private || (!lc.leased() && !opts.ReadOnly) {
		return lc.Conn.BeginTx(ctx, opts)
	}
	if lc.tx != nil || !lc.autoCommit() {
		// SQLite refuses a transaction within a transaction: go-sqlite3's
		// BeginTx returns its error.
		return lc.Conn.BeginTx(ctx, opts)
	}
	if err := lc.fileCheck(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tx := &leaseTx{lc: lc}
	if opts.ReadOnly {
		var err error
		if tx.restoreQueryOnly, err = lc.queryOnly(); err != nil {
			return nil, err
		}
		if _, err := lc.Conn.ExecContext(context.WithoutCancel(ctx), "BEGIN", nil); err != nil {
			return nil, err
		}
		if _, err := lc.Conn.ExecContext(context.Background(), "PRAGMA query_only = 1", nil); err != nil {
			lc.rollback()
			return nil, err
		}
		tx.readOnly = true
		lc.tx = tx
		return tx, nil
	}
	w, err := lc.startWrite(ctx, class{write: true, fenceable: true}, true)
	if err != nil {
		return nil, err
	}
	tx.w = w
	lc.tx = tx
	return tx, nil
}

// Begin is BeginTx with default options.
func (lc *leaseConn) Begin() (driver.Tx, error) {
	return lc.BeginTx(context.Background(), driver.TxOptions{})
}

func (lc *leaseConn) queryOnly() (bool, error) {
	rows, err := lc.Conn.QueryContext(context.Background(), "PRAGMA query_only", nil)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return false, err
	}
	n, _ := v[0].(int64)
	return n != 0, nil
}

// leaseTx is a transaction the driver began. Its hold on the lane ends
// exactly once: at Commit, Rollback (including database/sql's rollback when
// the transaction's context ends, which may run on another goroutine) or
// when the connection closes.
type leaseTx struct {
	lc               *leaseConn
	w                leasedWrite // zero when read-only
	readOnly         bool
	restoreQueryOnly bool
	once             sync.Once
	abandoned        atomic.Bool // rolled back as a panic unwound through it (unwind.go)
}

// exposing tells the transaction's Hold when query may end the
// transaction (it names COMMIT or END: a CASE … END counts too, and
// costs only an early start of the engine's listening).
func (tx *leaseTx) exposing(query string) {
	if h := tx.w.h; h != nil && h.Inline() && mayEndTx(query) {
		h.Exposing()
	}
}

// mayEndTx reports whether query contains the word COMMIT or END, in any
// case.
func mayEndTx(query string) bool {
	for _, kw := range [...]string{"commit", "end"} {
		for i := 0; i+len(kw) <= len(query); i++ {
			if !strings.EqualFold(query[i:i+len(kw)], kw) {
				continue
			}
			before := i == 0 || !isWordByte(query[i-1])
			after := i+len(kw) == len(query) || !isWordByte(query[i+len(kw)])
			if before && after {
				return true
			}
		}
	}
	return false
}

// isWordByte reports whether b may be part of an SQL identifier.
func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// Commit runs the fencing check inside the transaction and commits; if the
// lease was lost it rolls back and returns an error wrapping ErrLeaseLost.
func (tx *leaseTx) Commit() error {
	defer tx.end()
	if tx.abandoned.Load() {
		return errTxAbandoned
	}
	var g unwindGuard
	defer g.onUnwind(tx.abandon)
	err := tx.commit()
	g.finished()
	return err
}

// commit is Commit's statements: the read-only transaction's COMMIT, or
// the fenced commit of a write.
func (tx *leaseTx) commit() error {
	if tx.readOnly {
		_, err := tx.lc.Conn.ExecContext(context.Background(), "COMMIT", nil)
		if err != nil {
			tx.lc.rollback()
		}
		return err
	}
	return tx.w.finish(nil)
}

// Rollback rolls the transaction back and ends its hold.
func (tx *leaseTx) Rollback() error {
	defer tx.end()
	if tx.abandoned.Load() {
		return nil
	}
	if !tx.readOnly {
		return tx.w.abort()
	}
	_, err := tx.lc.Conn.ExecContext(context.Background(), "ROLLBACK", nil)
	return err
}

func (tx *leaseTx) end() {
	tx.once.Do(func() {
		if tx.lc.tx == tx {
			tx.lc.tx = nil
		}
		if tx.readOnly && !tx.restoreQueryOnly {
			tx.lc.Conn.ExecContext(context.Background(), "PRAGMA query_only = 0", nil)
		}
		if !tx.readOnly {
			tx.w.release()
		}
	})
}
