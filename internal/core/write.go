package core

import (
	"context"
	"database/sql/driver"
	"errors"
	"strconv"
	"time"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// leasedWrite is the one mechanism every write path uses (Exec, Query,
// a prepared statement, BeginTx): start takes the lease of the context's
// lane and, when the write is fenced, opens the driver's own BEGIN
// IMMEDIATE; the caller runs its statements; finish either commits, after
// the fencing check inside the transaction, or rolls back, and releases the
// lease exactly once.
type leasedWrite struct {
	lc     *leaseConn
	h      *lease.Hold    // nil: the context opted out of the lease
	fenced bool           // the write runs inside the driver's BEGIN IMMEDIATE
	fence  *lease.Fencing // the fencing of that transaction (nil without a lease)
}

// release ends the hold on the lane; later calls do nothing (Hold.Release
// runs once, whichever goroutine calls it first: a transaction may end on
// another goroutine than the one that began it, as when database/sql rolls
// back after the transaction's context ends).
func (w *leasedWrite) release() {
	w.lc.endTurn()
	releaseHold(w.h)
}

// startWrite takes the lease for a write of class k made with ctx. A
// transaction (tx true) always opens BEGIN IMMEDIATE, with or without a
// lease; a statement does when it is fenceable and leased. On error
// nothing is held.
//
// Right after BEGIN IMMEDIATE the lease is checked (lease.Hold.FenceBegin).
// A lease this write took itself (not one it re-entered from the context)
// that turns out to be gone — the row this process kept between writes was
// broken, taken over, or removed by a tool that dropped the lease tables —
// is taken again before any of the caller's statements runs: nothing was
// written under it, so the caller sees only the wait.
func (lc *leaseConn) startWrite(ctx context.Context, k class, tx bool) (leasedWrite, error) {
	var confirm lease.Confirmer
	if tx || k.fenceable {
		confirm = confirmConn{lc}
		if lc.passInCommit() {
			confirm = inlineConn{confirmConn{lc}}
		}
	}
	for attempt := 0; ; attempt++ {
		h, err := lc.c.acquire(ctx, confirm)
		if err != nil {
			return leasedWrite{}, err
		}
		w := leasedWrite{lc: lc, h: h, fenced: tx || (k.fenceable && h != nil)}
		if h != nil && !h.Begun() {
			// The lane's lease is held: now the file's write turn
			// (taken already when the grant was confirmed inside the
			// caller's BEGIN, h.Begun).
			if err := lc.takeTurn(ctx); err != nil {
				releaseHold(h)
				return leasedWrite{}, err
			}
		}
		if !w.fenced {
			return w, nil
		}
		if h == nil || !h.Begun() {
			if err := lc.beginImmediate(ctx, h != nil && h.Claimed()); err != nil {
				lc.endTurn()
				releaseHold(h)
				return leasedWrite{}, lc.c.writeError(err)
			}
		}
		if h == nil {
			return w, nil
		}
		f, lost, _ := h.FenceBegin(ctx, fenceQuerier{lc})
		if lost && !h.Reentrant() && attempt < maxRetakes {
			lc.rollback()
			releaseHold(h)
			continue
		}
		// A lost lease, or a failed read, fails the commit (f.Check).
		w.fence = f
		return w, nil
	}
}

// maxRetakes bounds how many times one write takes the lease again after
// finding it gone right after BEGIN (see startWrite): each retake claims
// the lane anew, so a second loss in a row means someone keeps breaking it.
const maxRetakes = 2

// finish ends a statement's write: it commits (fenced; a lost lease rolls
// back and returns an error wrapping ErrLeaseLost) and returns runErr, or
// the commit's error when runErr is nil. The lease is released.
//
// A failed statement is committed too when its transaction is still open,
// as autocommit would: SQLite has already undone what the statement did
// (or, for an INTERRUPT and the ROLLBACK conflict rule, the whole
// transaction), except under the FAIL conflict rule (INSERT OR FAIL, ON
// CONFLICT FAIL, RAISE(FAIL)), whose changes before the failure stay — and
// go-sqlite3 commits them.
//
// A statement that failed with its context's error, which the base
// reported instead of an error of SQLite's, is rolled back instead: the
// base may have let SQLite finish the statement and reported the context
// afterwards (modernc does, when the context ends while the statement
// runs), and a caller told that its write failed must find it not written.
func (w *leasedWrite) finish(runErr error) error {
	defer w.release()
	if !w.fenced {
		return w.lc.c.writeError(runErr)
	}
	if runErr != nil {
		switch {
		case w.lc.autoCommit():
		case contextReported(runErr):
			w.lc.rollback()
		default:
			w.lc.commitFenced(w.fence) // rolls back when it cannot commit
		}
		return w.lc.c.writeError(runErr)
	}
	return w.lc.c.writeError(w.lc.commitFenced(w.fence))
}

// abort rolls back the transaction the write opened and releases the
// lease. It returns SQLite's ROLLBACK error, as go-sqlite3's Rollback does
// (for example "cannot rollback - no transaction is active" after the
// caller ended the transaction by hand).
func (w *leasedWrite) abort() error {
	defer w.release()
	if !w.fenced {
		return nil
	}
	_, err := w.lc.Conn.ExecContext(context.Background(), "ROLLBACK", nil)
	return err
}

// beginImmediate starts the driver's write transaction once the lease is
// held; contended says that this process had to claim the lane (or is
// being granted it), so other processes may still be finishing with
// SQLite's write lock. The only competitors for SQLite's write lock are then other lanes
// and short lease bookkeeping, so instead of SQLite's busy handler (which
// sleeps at least 1 ms per retry) it retries in Go with a back-off from
// 10µs to 500µs, for as long as the connection's busy_timeout allows,
// honouring ctx. SQLite's SQLITE_BUSY comes back unchanged at the end.
func (lc *leaseConn) beginImmediate(ctx context.Context, contended bool) error {
	if !contended {
		// This process kept the lane (or took no lease): nobody else is
		// expected to want the write lock, and SQLite's busy handler is
		// the cheaper path. It waits as the base's own BEGIN would, ctx
		// ending the wait as the base lets it (go-sqlite3 interrupts the
		// statement, modernc's and ncruces's busy handlers return): a
		// lock held outside the lease (a hand-written BEGIN IMMEDIATE, a
		// process without cleolease) never keeps the caller past its
		// context.
		_, err := lc.Conn.ExecContext(ctx, "BEGIN IMMEDIATE", nil)
		return err
	}
	bg := context.WithoutCancel(ctx)
	// The user's busy_timeout (read each time: a PRAGMA through any path,
	// Raw included, may have changed it) bounds the retries and is restored.
	busyMS, _ := lc.busyTimeout(bg)
	if _, err := lc.Conn.ExecContext(bg, "PRAGMA busy_timeout = 0", nil); err != nil {
		return err
	}
	defer lc.Conn.ExecContext(bg, "PRAGMA busy_timeout = "+strconv.Itoa(busyMS), nil)
	deadline := time.Now().Add(time.Duration(busyMS) * time.Millisecond)
	wait := 10 * time.Microsecond
	for {
		_, err := lc.Conn.ExecContext(bg, "BEGIN IMMEDIATE", nil)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if wait *= 2; wait > 500*time.Microsecond {
			wait = 500 * time.Microsecond
		}
	}
}

// busyTimeout reads the connection's PRAGMA busy_timeout, in
// milliseconds.
func (lc *leaseConn) busyTimeout(ctx context.Context) (int, error) {
	rows, err := lc.Conn.QueryContext(ctx, "PRAGMA busy_timeout", nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, err
	}
	n, _ := v[0].(int64)
	return int(n), nil
}

// confirmConn is the connection a waiter told of its grant opens its
// write transaction on, to confirm the grant inside it before the caller's
// statements run (lease.Confirmer).
type confirmConn struct{ lc *leaseConn }

// BeginImmediate opens the write transaction as startWrite would after a
// claim.
// It takes the file's write turn first (the lane is granted by now).
func (c confirmConn) BeginImmediate(ctx context.Context) error {
	if err := c.lc.takeTurn(ctx); err != nil {
		return err
	}
	if err := c.lc.beginImmediate(ctx, true); err != nil {
		c.lc.endTurn()
		return err
	}
	return nil
}

// QueryContext reads inside that transaction (the statements prepared
// once per connection, see fenceQuerier).
func (c confirmConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return fenceQuerier{c.lc}.QueryContext(ctx, query, args)
}

// Rollback ends that transaction.
func (c confirmConn) Rollback() { c.lc.rollback() }

// inlineConn is a confirmConn on which the engine may also claim a free
// lane inside the write transaction itself (lease.InlineConfirmer): the
// claim and its release are then part of the caller's one transaction.
// Offered only where passInCommit holds (no ConnectHook callbacks see the
// lease row).
type inlineConn struct{ confirmConn }

// TryBeginImmediate opens the write transaction only if SQLite's write
// lock is free now (busy_timeout 0 for the one try, the user's restored).
// The file's write turn is only tried too: a writer that waited for it
// here would wait unseen — no want announced, no registration — and the
// lane's waiters would no longer be served in their order (the claim
// transaction that follows a refusal takes the turn, and keeps it for this
// writer: lease.Engine.TakeTurn).
func (c inlineConn) TryBeginImmediate(ctx context.Context) (begun bool, err error) {
	lc := c.lc
	if !lc.tryTurn() {
		return false, nil
	}
	defer func() {
		if !begun {
			lc.endTurn()
		}
	}()
	bg := context.WithoutCancel(ctx)
	busyMS, err := lc.busyTimeout(bg)
	if err != nil {
		return false, err
	}
	if busyMS != 0 {
		if _, err := lc.Conn.ExecContext(bg, "PRAGMA busy_timeout = 0", nil); err != nil {
			return false, err
		}
		defer lc.Conn.ExecContext(bg, "PRAGMA busy_timeout = "+strconv.Itoa(busyMS), nil)
	}
	_, err = lc.Conn.ExecContext(bg, "BEGIN IMMEDIATE", nil)
	if err != nil && isBusy(err) {
		return false, nil
	}
	return err == nil, err
}

// isBusy reports SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool { return busy.Is(err) }

// rollback ends the connection's open transaction, if any.
// contextReported reports an error that is a context's end
// (context.Canceled, context.DeadlineExceeded) and not SQLite's.
func contextReported(err error) bool {
	if _, ok := sqlbase.Code(err); ok {
		return false
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (lc *leaseConn) rollback() {
	if !lc.autoCommit() {
		lc.Conn.ExecContext(context.Background(), "ROLLBACK", nil)
	}
	lc.endTurn()
}

// commitFenced checks the lease inside the transaction (f: nil without a
// lease), then commits; a lost lease rolls back and returns the typed
// error. SQLite's own errors come back unchanged.
//
// When this commit ends the hold's turn and another process waits, the
// next holder's grant is written in the same transaction, just before
// COMMIT (lease.Fencing.Pass), unless user callbacks may see it (see
// passInCommit); a COMMIT that fails rolls it back with the data, and the
// Pass reads the row again before the hold is released.
func (lc *leaseConn) commitFenced(f *lease.Fencing) error {
	ctx := context.Background()
	var pass *lease.Pass
	if f != nil {
		open := !lc.autoCommit()
		if err := f.Check(ctx, fenceQuerier{lc}, open); err != nil {
			lc.rollback()
			return err
		}
		// A grant claimed inside this transaction is released in it, or
		// kept (lease.Fencing.EndInline); the driver's Hold is one write.
		// Kept, and released later on the engine's connection, when the
		// application reached this connection during the transaction
		// (passInCommit): its callbacks must not see the release.
		if err := f.EndInline(ctx, fenceQuerier{lc}, open, lc.passInCommit()); err != nil {
			lc.rollback()
			return err
		}
		if open && lc.passInCommit() {
			p, err := f.Pass(ctx, fenceQuerier{lc})
			if err != nil {
				lc.rollback()
				return err
			}
			pass = p
		}
	}
	_, err := lc.Conn.ExecContext(ctx, "COMMIT", nil)
	if err == nil || lc.autoCommit() {
		lc.endTurn()
	}
	if err != nil {
		lc.rollback()
		if pass != nil {
			pass.Failed()
		}
		return err
	}
	if pass != nil {
		pass.Committed()
	}
	if f != nil {
		f.Committed()
	}
	return nil
}

// passInCommit reports whether the connector's connections may carry the
// next holder's grant in their transactions: not when its base driver has
// a ConnectHook, which may register callbacks (an update hook, an
// authorizer, a trace) that must never see the lease rows; there the hold
// hands off on the engine's own connection, whose callbacks are cleared.
func (c *Connector) passInCommit() bool { return !c.drvBase.Hooked() }

// passInCommit is the connector's answer for this connection, and no once
// the application has reached the base's own connection (OuterConn.Base:
// sql.Conn.Raw, then SQLiteConn, Raw, NcrucesConn, ModerncConn or
// Unwrap), where it may have registered callbacks of its own. Neither the
// next holder's grant (Fencing.Pass) nor the claim of a free lane
// (inlineConn) is then written on it.
func (lc *leaseConn) passInCommit() bool { return lc.c.passInCommit() && !lc.exposed.Load() }

// fenceQuerier serves the fencing checks from statements prepared once
// per connection: they send the same few query texts for every hold of an
// engine (see lease.Hold.Fence), and a connection belongs to one
// connector, so to one engine.
type fenceQuerier struct{ lc *leaseConn }

func (f fenceQuerier) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	lc := f.lc
	st := lc.fence[query]
	if st == nil {
		ps, err := lc.Conn.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		st = ps
		if lc.fence == nil {
			lc.fence = map[string]driver.Stmt{}
		}
		lc.fence[query] = st
	}
	return st.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func releaseHold(h *lease.Hold) {
	if h != nil {
		h.Release()
	}
}
