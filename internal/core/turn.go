package core

import (
	"context"
	"time"
)

// The file's write turn (lease.Engine.TakeTurn) on a connection: a leased
// write holds it from just before its BEGIN IMMEDIATE (or its autocommit
// statement) until its COMMIT or ROLLBACK, after the lane's lease, so
// that leased writers of every lane wait for one another in the kernel
// instead of in SQLite's busy handler.
//
// A goroutine of this process that owns the turn is waited for at most
// the connection's busy_timeout, and another process at most _lease_wait:
// past either the write goes on without the turn, to SQLite's busy
// handler, as it would through the base driver. That is the answer for a
// transaction that, while it holds the turn, writes on another connection
// of the pool (the process would otherwise wait for itself): the second
// write gets SQLITE_BUSY after twice busy_timeout, as the base driver
// gives it after one.

// takeTurn takes the write turn for this connection's write, unless it
// holds it already; ctx's error when ctx ends first.
func (lc *leaseConn) takeTurn(ctx context.Context) error {
	if lc.turn != nil {
		return nil
	}
	e := lc.c.Engine()
	if e == nil {
		return nil
	}
	t, err := e.TakeTurn(ctx, lc.turnLocal, lc.c.cfg.Wait)
	if err != nil {
		return err
	}
	lc.turn = t
	return nil
}

// turnLocal is how long the write waits for another goroutine of the
// process that owns the turn: the connection's busy_timeout.
func (lc *leaseConn) turnLocal() time.Duration {
	ms, err := lc.busyTimeout(context.Background())
	if err != nil {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// tryTurn takes the write turn only if nobody holds it now.
func (lc *leaseConn) tryTurn() bool {
	if lc.turn != nil {
		return true
	}
	e := lc.c.Engine()
	if e == nil {
		return true
	}
	lc.turn = e.TryTurn()
	return lc.turn != nil
}

// endTurn releases the write turn this connection holds, if any.
func (lc *leaseConn) endTurn() {
	if t := lc.turn; t != nil {
		lc.turn = nil
		t.End()
	}
}
