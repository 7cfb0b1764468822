package lease

// Rows that name this process but are not its grant (issue 31).
//
// A restored file — a Litestream restore, sqlite3 .backup or .restore, the
// backup API, VACUUM INTO, a copy over the file, in place (the inode
// kept) or not — brings back old lease rows. Holder ids are per process,
// so a row it brings back may name this very process, at an epoch it has
// already used, while it holds nothing (or holds the lane at another
// epoch). Such a row must neither be used at its old epoch (an epoch the
// old file already issued would be issued again) nor be left standing:
// its holder is alive, so no waiter reclaims it, and a waiter that
// registers with it is told to look, finds the same row, and waits for
// ever. So:
//
//   - a claim takes a row that names this process as handed to it only
//     when it saw the lane free or another process's before, and the
//     row's epoch is above every epoch it saw there and every epoch this
//     process has seen the lane carry (claimRun.handedToUs); any other
//     such row it takes over at the clock floor (attempt), as it would a
//     dead holder's;
//   - when this process learns that someone waits for a lane it does not
//     hold — a waiter's registration reaches it (registered), or its own
//     grant was found lost (markLost) — and no claim of its own runs, the
//     lane's settle goroutine reads the row (without the write lock) and,
//     if it names this process, releases it under SQLite's write lock
//     (checkStale, settleStep, retireRow): unless it is a grant in flight
//     to a claim that gave up (lateGrant), which the settle adopts as
//     before. The waiters then find the lane free and claim it, at the
//     floor, in grant order.
//
// A released row keeps its epoch; the next grant, a claim, takes the
// floor (takeoverFloor), so no epoch is issued twice.

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

// newEpoch reports whether epoch is above every epoch this process has
// seen the lane carry: a row that names this process at such an epoch may
// be a grant in flight to it, one at or below it cannot be.
func (l *laneState) newEpoch(epoch int64) bool { return epoch > l.epochs.high.Load() }

// retireRow releases r, the lane's active row, which names this process
// but is not a grant it holds or was handed (a restored or copied file's);
// the caller is inside BEGIN IMMEDIATE. Guarded like every release: a row
// that changed meanwhile is left alone.
func (l *laneState) retireRow(ctx context.Context, c *sql.Conn, r *row) error {
	err := releaseRow(ctx, c, r.id, l.e.holderID, r.epoch, l.e.nowMS())
	if err == errLostRow {
		return nil
	}
	if err == nil {
		l.e.logf(slog.LevelWarn, "cleolease: released a lease row that names this process but is not its grant (a restored or copied file?)",
			"scope", l.scope, "lane", l.lane, "epoch", r.epoch)
	}
	return err
}

// checkStale asks the lane's settle goroutine to look for a row that names
// this process while it holds no grant of the lane and no claim of it
// runs, and to release it (see stale.go): someone waits for the lane.
func (l *laneState) checkStale() {
	if l.e.opts.MemoryOnly || l.e.checkFile(false) != nil {
		return
	}
	l.mu.Lock()
	if l.closing || l.held.row != nil || l.claimSlot.busyLocked() {
		l.mu.Unlock()
		return
	}
	l.settler.check = true
	start := l.settler.startLocked()
	l.mu.Unlock()
	if start && !l.startSettle() {
		l.mu.Lock()
		l.settler.stoppedLocked() // closing: the lane's shutdown settles it
		l.mu.Unlock()
	}
}

// sweepStale releases the active rows that name this process in lanes of
// which this engine has no state (a lane it never used cannot be held by
// it, nor be granted to it: no claim of it ever ran): rows an earlier
// engine of this process left in a file restored since, or that a copy
// brought from another file this process has open. Lanes it knows are
// left to their settle (checkStale). Open runs it once, the heartbeat
// once a period (sweepBeat), and a registration for a lane this engine
// does not know starts it (startSweep). One read when no row names this
// process; errors leave the rows to the next sweep, or to the claims that
// take them over (handedToUs).
func (e *Engine) sweepStale(ctx context.Context) {
	if !e.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer e.sweeping.Store(false)
	if e.checkFile(false) != nil {
		return // never a read of a file renamed over or deleted (see tryImmediate)
	}
	rows, err := e.db().QueryContext(ctx, `SELECT scope, lane FROM main._writer_leases WHERE holder_id = ? AND active = 1`, e.holderID)
	if err != nil {
		return // (no table yet, busy, a file that refuses reads: nothing to do now)
	}
	var unknown []laneKey
	for rows.Next() {
		var k laneKey
		if rows.Scan(&k.scope, &k.lane) != nil {
			continue
		}
		if l := e.knownLane(k.scope, k.lane); l != nil {
			defer l.checkStale() // (after rows is closed: the settle uses the connection)
			continue
		}
		unknown = append(unknown, k)
	}
	rows.Close()
	if len(unknown) == 0 {
		return
	}
	err = e.immediateOp(ctx, "sweep", func(ctx context.Context, c *sql.Conn) error {
		for _, k := range unknown {
			if e.knownLane(k.scope, k.lane) != nil {
				continue // a claim began: it takes the row over (handedToUs)
			}
			r, err := readActive(ctx, c, k.scope, k.lane)
			if err != nil {
				return err
			}
			if r == nil || r.h.ID != e.holderID {
				continue
			}
			if err := releaseRow(ctx, c, r.id, e.holderID, r.epoch, e.nowMS()); err != nil && err != errLostRow {
				return err
			}
			e.logf(slog.LevelWarn, "cleolease: released a lease row that names this process but is not its grant (a restored or copied file?)",
				"scope", k.scope, "lane", k.lane, "epoch", r.epoch)
		}
		return nil
	})
	if err != nil {
		e.logf(slog.LevelDebug, "cleolease: stale lease rows left for now", "err", err)
	}
}

// startSweep runs sweepStale on a goroutine of its own, unless the engine
// is closing or a sweep runs.
func (e *Engine) startSweep() {
	if e.opts.MemoryOnly || e.sweeping.Load() {
		return
	}
	e.goTracked(func() {
		ctx, cancel := context.WithTimeout(e.hbCtx, 5*time.Second)
		defer cancel()
		e.sweepStale(ctx)
	})
}
