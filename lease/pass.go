package lease

import (
	"context"
	"database/sql/driver"
	"io"
	"log/slog"
	"slices"
	"time"
)

// Pass is a hand-over of a lane written inside the holder's last data
// transaction: the next holder's grant, committed with the data (one
// SQLite write transaction instead of two), its doorbell rung once the
// COMMIT has returned.
//
// The caller drives it: Fencing.Pass writes the grant on the
// transaction's connection after the fencing check and before COMMIT;
// then exactly one of Committed (COMMIT returned nil) or Failed (COMMIT
// failed or its outcome is unknown) follows, before the Hold is released.
// Before Failed the caller ends the transaction: SQLite leaves it open
// after some failed COMMITs (a deferred foreign key, SQLITE_BUSY), and a
// later COMMIT of it would commit the grant behind the Pass's back (safe —
// the fence then finds the lane gone — but the waiter is not rung); the
// driver always rolls back there, as go-sqlite3's Tx.Commit does.
type Pass struct {
	l     *laneState
	g     *grant         // the grant handed over
	to    holder         // the waiter granted
	epoch int64          // the epoch written for it
	regs  []registration // the registrations taken from the inbox
	gone  []string       // waiters found dead or no longer waiting
}

// passSQL rewrites the lane's active row for the next holder, guarded by
// this holder's (id, holder, epoch) and by an empty queue (a waiter with a
// queue row might come first: the hand-off after COMMIT orders those), in
// the caller's transaction. Its arguments are those of grantTo's guarded
// UPDATE; it returns the row's id and new epoch, or no row.
const passSQL = `UPDATE main._writer_leases SET ` + grantFields + `, epoch = ?11 + 1
	WHERE id = ?9 AND holder_id = ?10 AND epoch = ?11 AND active = 1
	AND NOT EXISTS (SELECT 1 FROM main._writer_queue WHERE scope = ?1 AND lane = ?2)
	AND NOT EXISTS (SELECT 1 FROM main._writer_leases WHERE scope = ?1 AND lane = ?2 AND epoch > ?11)
	RETURNING id, epoch`

// Pass ends the hold's turn inside its transaction when it can: if this
// commit ends the turn (the slice is over, or no more of this process's
// work waits at the lane's gate for it and its writer is not expected
// back: see turn) and the first live waiter in
// line is one that registered with this process and still announces its
// wait (its want byte), while no queue row exists, it rewrites the lane's row for that waiter on
// q — the connection of the transaction the Fencing checked, still open,
// just before its COMMIT — and returns the Pass. Otherwise, or when the
// row could not be rewritten, it returns nil and changes nothing: the
// release hands off the old way (on the engine's connection) or keeps the
// lane. err is set only when the statement failed and q's transaction
// ended with it (SQLite rolled it back): the caller then fails its commit
// with err.
//
// The caller calls it only for the last transaction of the Hold (Release
// follows the COMMIT: the driver takes a Hold per write), never when user
// callbacks (an update hook, an authorizer) may see the statement, and
// only after Check passed with the transaction open.
func (f *Fencing) Pass(ctx context.Context, q driver.QueryerContext) (*Pass, error) {
	h := f.h
	if h.g == nil || h.root != nil || !h.gateHeld || !f.begun || f.self || h.released.Load() || h.g.inline.Load() {
		return nil, nil
	}
	l, g := h.l, h.g
	if l.e.opts.MemoryOnly || g.lost.Load() || g.gathering(time.Now()) {
		// (An inline grant's hand-off waits for the waiters it kept
		// out: gather, inline.go.)
		return nil, nil
	}
	if l.keepTurn(g) {
		// The turn goes on for the work queued at the gate, or for a
		// writer that comes straight back (turn.go): the release that
		// follows this COMMIT must not find the slice over a moment
		// later and hand the lane off in a transaction of its own — the
		// next commit passes it here, or the watcher after returnGrace.
		h.inTurn.Store(true)
		return nil, nil
	}
	// Only a waiter that registered can be granted here (and one that
	// registered is tested below for its want byte): with none, the
	// commit costs one look at the inbox.
	l.mu.Lock()
	mine, none := l.held.row == g, l.inbox.emptyLocked()
	l.mu.Unlock()
	if !mine || none {
		return nil, nil
	}
	regs := l.takePending()
	// Judged inside the transaction, which holds SQLite's write lock: a
	// waiter that gave up has released its want byte first (see
	// leaveQueue), so it is never granted.
	cand, gone, _ := l.first(ctx, nil, withRegistrations(nil, regs))
	if cand == nil || cand.h.ID == l.e.holderID {
		l.restorePending(regs)
		return nil, nil
	}
	if err := l.e.fault("pass"); err != nil {
		l.restorePending(regs)
		return nil, nil
	}
	g.given.Store(true) // a heartbeat racing the commit must not call the grant lost
	epoch, err := l.passRow(ctx, q, g, cand.h, cand.ttl)
	if err != nil || epoch == 0 {
		g.given.Store(false)
		l.restorePending(regs)
		return nil, err
	}
	return &Pass{l: l, g: g, to: cand.h, epoch: epoch, regs: regs, gone: gone}, nil
}

// passRow runs passSQL on q for the grant g handed to h (ttl: h's TTL in
// milliseconds) and returns the new epoch, or 0 when the guard matched no
// row. A failed statement returns its error.
func (l *laneState) passRow(ctx context.Context, q driver.QueryerContext, g *grant, h holder, ttl int64) (int64, error) {
	ttl, slot, start := l.holderValues(h, ttl)
	vals := []any{l.scope, l.lane, h.ID, h.PID, l.e.nowMS(), ttl, start, slot, g.id, l.e.holderID, g.epoch}
	args := make([]driver.NamedValue, len(vals))
	for i, v := range vals {
		args[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	rows, err := q.QueryContext(ctx, passSQL, args)
	if err != nil {
		return 0, err
	}
	dest := make([]driver.Value, 2)
	err = rows.Next(dest)
	rows.Close()
	if err == io.EOF {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	epoch, _ := dest[1].(int64)
	if epoch != g.epoch+1 {
		return 0, nil // cannot happen (the statement sets it); never trusted
	}
	l.epochs.note(epoch)
	return epoch, nil
}

// Committed completes a Pass whose transaction committed: the lane is the
// waiter's, its doorbell rings (with the registrations it was not chosen
// over), and registrations that arrive from now on follow the lane.
func (p *Pass) Committed() {
	if err := p.l.e.fault("pass/commit"); err != nil {
		// A test's stand-in for a COMMIT whose outcome is unknown.
		p.Failed()
		return
	}
	p.done()
}

// done is the end of a Pass that committed.
func (p *Pass) done() {
	l := p.l
	l.countHandoff()
	l.e.stats.PassedInCommit.Add(1)
	l.e.stats.DeadWaiters.Add(int64(len(p.gone)))
	l.handedOnTo(p.g, p.to.ID, passedGrant{to: p.to, epoch: p.epoch, at: time.Now()})
	rest := slices.DeleteFunc(p.regs, func(r registration) bool { return r.ID == p.to.ID || slices.Contains(p.gone, r.ID) })
	l.e.bell.ringGrant(p.to.ID, l.scope, l.lane, rest)
	l.forwardPending(p.to.ID)
	l.e.logf(slog.LevelDebug, "cleolease: lease handed off in commit", "scope", l.scope, "lane", l.lane, "epoch", p.g.epoch)
}

// Failed completes a Pass whose COMMIT failed or whose outcome is unknown
// (the caller has rolled back, or the transaction ended). Before anything
// else the row is read again on the engine's connection: still this
// holder's at its epoch, the lane is as it was (the Hold still holds; its
// release hands off the old way or keeps the lane); the waiter's at the
// passed epoch, the grant committed after all (Committed's work is done);
// anything else, the grant is lost. An unreadable row leaves the grant
// held: the guarded hand-off that follows finds out.
func (p *Pass) Failed() {
	l, g := p.l, p.g
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := l.readActive(ctx)
	switch {
	case err != nil || (r != nil && r.id == g.id && r.h.ID == l.e.holderID && r.epoch == g.epoch):
		g.given.Store(false)
		l.restorePending(p.regs)
	case r != nil && r.id == g.id && r.h.ID == p.to.ID && r.epoch == p.epoch:
		p.done()
	default:
		g.given.Store(false)
		l.restorePending(p.regs)
		l.markLost(g, l.whyGone(ctx, dbReader(l.e.db()), g))
	}
}
