package lease

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"
)

// heartbeatLoop refreshes heartbeat_at (and reentrancy_depth) of every row
// this process holds, every TTL/3 — a row whose heartbeat_at was written
// less than TTL/6 ago (by its grant or the last beat) is skipped, so a
// short hold costs no heartbeat write, and heartbeat_at is never older
// than about TTL/2 — on the engine's connection with a short
// busy timeout. SQLITE_BUSY is transient: the beat is retried on the next
// tick; liveness never rests on the heartbeat unless the TTL-steal policy
// is chosen. A refresh that matches no row marks the grant lost. Close
// ends the loop and a beat in progress (hbCtx).
//
// The same goroutine follows the liveness files (followSidecar): on every
// tick, when the file watch reports the sidecar's removal (at once if
// this process has a stake in a lane: sidecarRemoved) and when a
// registration names a file this process does not see (kickFollow).
func (e *Engine) heartbeatLoop() {
	defer e.wg.Done()
	t := time.NewTicker(e.opts.TTL / 3)
	defer t.Stop()
	gone := e.sidecarGone()
	grants := e.stats.Grants.Load()
	for {
		select {
		case <-e.hbCtx.Done():
			return
		case <-t.C:
			if e.hbCtx.Err() != nil {
				return // both were ready: select chose at random
			}
			e.followSidecar()
			held := e.beat()
			e.sweepBeat()
			g := e.stats.Grants.Load()
			e.renewProof(held || g != grants)
			grants = g
		case <-gone:
			e.sidecarRemoved()
		case <-e.followKick:
			e.followSidecar()
		}
	}
}

// sweepBeat looks, once a heartbeat period, for rows that name this
// process but are not its grants (sweepStale): a waiter that cannot reach
// it by datagram (no doorbell in this build, a datagram lost) is not left
// behind such a row for longer.
func (e *Engine) sweepBeat() {
	ctx, cancel := context.WithTimeout(e.hbCtx, e.opts.TTL/3)
	defer cancel()
	e.sweepStale(ctx)
}

// beat refreshes the rows this process holds (see heartbeatLoop) and
// reports whether it holds any.
func (e *Engine) beat() (held bool) {
	e.mu.Lock()
	lanes := make([]*laneState, 0, len(e.lanes))
	for _, l := range e.lanes {
		lanes = append(lanes, l)
	}
	e.mu.Unlock()
	for _, l := range lanes {
		l.mu.Lock()
		g, depth := l.held.row, l.held.depth
		l.mu.Unlock()
		held = held || g != nil
		began := time.Now()
		if g == nil || g.lost.Load() || !g.beatDue(began, e.opts.TTL/6) {
			// A grant younger than TTL/6 (a short hold under
			// contention, handed on long before its TTL) has the
			// heartbeat_at its grant wrote: no write.
			continue
		}
		ctx, cancel := context.WithTimeout(e.hbCtx, e.opts.TTL/3)
		err := e.immediateOp(ctx, "heartbeat", func(ctx context.Context, c *sql.Conn) error {
			return beatRow(ctx, c, g.id, e.holderID, g.epoch, depth, e.nowMS())
		})
		cancel()
		if err == nil {
			g.beatAt.Store(began.UnixNano())
		}
		if err == errLostRow {
			if !g.given.Load() { // not gone by our own hand-off
				l.markLost(g, l.whyGone(context.Background(), dbReader(e.db()), g))
			}
		} else if errors.Is(err, ErrFileChanged) {
			l.markLost(g, "database file replaced or removed")
		} else if err != nil {
			e.logf(slog.LevelDebug, "cleolease: heartbeat deferred", "scope", l.scope, "lane", l.lane, "err", err)
		}
	}
	return held
}
