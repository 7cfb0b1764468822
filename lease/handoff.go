package lease

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"slices"
	"time"
)

// head returns the first live waiter in grant order among the queue rows
// and the registrations regs (waiters that told this process they wait; a
// waiter with a row is taken from its row), deleting the queue rows of
// dead waiters on the way (gone lists the ids of the dead or no longer
// waiting ones it met). Rows of another implementation's waiters are
// skipped: those poll and race for a free row by themselves.
func (l *laneState) head(ctx context.Context, c *sql.Conn, regs []registration) (hd *queued, gone []string, err error) {
	ws, err := readQueue(ctx, c, l.scope, l.lane)
	if err != nil {
		return nil, nil, err
	}
	return l.first(ctx, c, withRegistrations(ws, regs))
}

// first is head for the waiters ws; c may be nil when none has a row.
// Waiters are judged by waits (a registration must prove it waits).
func (l *laneState) first(ctx context.Context, c *sql.Conn, ws []queued) (hd *queued, gone []string, err error) {
	i, skipped := pick(ws, l.e.nowMS(), l.e.holderID, func(w queued) bool {
		return l.waits(w.h, w.row)
	})
	for _, j := range skipped {
		if ws[j].row && c != nil {
			if err := dropTicket(ctx, c, ws[j].ticket); err != nil {
				return nil, nil, err
			}
		}
		gone = append(gone, ws[j].h.ID)
	}
	if i < 0 {
		return nil, gone, nil
	}
	return &ws[i], gone, nil
}

// waits reports whether the waiter h may be granted the lane: it still
// waits (stillWaiting: its want byte, held by a live process, or, for a
// waiter known from its queue row, the benefit of the doubt when the byte
// cannot be tested) and it is not provably gone. A waiter whose liveness
// cannot be told (another pid namespace whose lock this process cannot
// test, a process the OS hides) is not taken for dead: dropping it would
// leave a live waiter out of every hand-off for good; granting a dead one
// costs the other waiters the TTL rule (reclaimDecision).
func (l *laneState) waits(h holder, fromRow bool) bool {
	return l.stillWaiting(h, fromRow) && !l.e.probe(h).dead()
}

// handOff releases this process's row and, in the same transaction, grants
// the lane to the first live waiter (checked inside that transaction, so a
// waiter that gave up is never granted). The caller owns the gate (or the
// engine is closing: then the linger watcher may be handing g off too, and
// the second call returns at once).
func (l *laneState) handOff(g *grant, why string) {
	if !g.handing.CompareAndSwap(false, true) {
		// Another hand-off of g runs (see grant.handing). The fault hook
		// only lets a test see the skip; there is nothing to inject.
		_ = l.e.fault("handoff/skipped")
		return
	}
	defer g.handing.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var rang string
	var gone []string
	// The registrations this process holds take part in the order without
	// being written: the ones not served now travel with the grant to the
	// new holder.
	regs := l.takePending()
	// The first live waiter among the registrations is found before the
	// transaction; inside it, one guarded statement grants it the lane if
	// no queue row could come first (the common case: waiters that
	// registered write no row). Otherwise the queue is read and ordered.
	cand, gone0, _ := l.first(ctx, nil, withRegistrations(nil, regs))
	me := &row{id: g.id, epoch: g.epoch, h: holder{ID: l.e.holderID}}
	err := l.e.immediateOp(ctx, "handoff", func(ctx context.Context, c *sql.Conn) error {
		rang, gone = "", nil // this body runs again after SQLITE_BUSY
		if g.lost.Load() {
			// Found lost since the caller looked (a heartbeat): the row
			// may name it again only if a restore brought it back, and a
			// grant known lost is never handed on (stale.go releases the
			// row).
			return errLostRow
		}
		// Checked again inside the transaction: a waiter that gave up
		// meanwhile is never granted the lane (see leaveQueue).
		if cand != nil && !l.waits(cand.h, false) {
			gone0 = append(gone0, cand.h.ID)
			cand = nil
		}
		if cand != nil {
			_, err := l.grantTo(ctx, c, cand.h, cand.ttl, grantArgs{prev: me, ifQueueEmpty: true, handOff: true})
			if err == nil {
				rang, gone = cand.h.ID, gone0
				g.given.Store(true)
				return nil
			}
			if err != errLostRow {
				return err
			}
		}
		var hd *queued
		var err error
		hd, gone, err = l.head(ctx, c, regs)
		if err != nil {
			return err
		}
		if hd != nil && hd.h.ID != l.e.holderID {
			if _, err := l.grantTo(ctx, c, hd.h, hd.ttl, grantArgs{prev: me, dequeue: hd.row, handOff: true}); err != nil {
				return err
			}
			rang = hd.h.ID
			g.given.Store(true)
			return nil
		}
		if err := releaseRow(ctx, c, g.id, l.e.holderID, g.epoch, l.e.nowMS()); err != nil {
			return err
		}
		g.given.Store(true)
		return nil
	})
	if err == nil {
		if rang != "" {
			l.countHandoff()
		}
		l.e.stats.DeadWaiters.Add(int64(len(gone)))
		// From now on a registration reaching this process follows the
		// lane to the new holder, or sends its waiter to look (see
		// registered).
		l.handedOn(g, rang)
	}
	switch {
	case err == errLostRow || errors.Is(err, ErrFileChanged):
		l.restorePending(regs)
		l.forwardPending("") // someone else has the lane: its waiters look
	case err != nil:
		l.restorePending(regs)
	case rang != "":
		rest := slices.DeleteFunc(regs, func(r registration) bool { return r.ID == rang || slices.Contains(gone, r.ID) })
		l.e.bell.ringGrant(rang, l.scope, l.lane, rest)
		l.forwardPending(rang) // registrations that arrived meanwhile
	default:
		l.restorePending(regs)
		l.forwardPending("")
	}
	switch {
	case err == errLostRow:
		l.markLost(g, l.whyGone(context.Background(), dbReader(l.e.db()), g))
	case errors.Is(err, ErrFileChanged):
		l.markLost(g, "database file replaced or removed")
	case err != nil:
		// The row stays ours; the watcher or Close retries.
		g.given.Store(false)
		l.e.logf(slog.LevelWarn, "cleolease: release failed", "scope", l.scope, "lane", l.lane, "err", err)
		return
	default:
		l.e.logf(slog.LevelDebug, "cleolease: lease "+why, "scope", l.scope, "lane", l.lane, "epoch", g.epoch)
	}
	l.dropRow(g)
}

var errLostRow = errors.New("row no longer ours")
