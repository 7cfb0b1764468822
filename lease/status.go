package lease

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// HolderStatus describes the active holder of a lane.
type HolderStatus struct {
	ID        string        `json:"id"`
	PID       int64         `json:"pid"`
	Alive     bool          `json:"alive"`
	Why       string        `json:"why"` // the evidence behind Alive
	Epoch     int64         `json:"epoch"`
	HeldFor   time.Duration `json:"held_for_ns"`
	Heartbeat time.Duration `json:"heartbeat_age_ns"`
	TTL       time.Duration `json:"ttl_ns"`
	Depth     int64         `json:"depth"`
}

// WaiterStatus describes one queued waiter.
type WaiterStatus struct {
	Ticket   int64         `json:"ticket"`
	ID       string        `json:"id"`
	PID      int64         `json:"pid"`
	Priority int64         `json:"priority"`
	Waited   time.Duration `json:"waited_ns"`
	Alive    bool          `json:"alive"`
	Why      string        `json:"why"`
}

// LaneStatus is one (scope, lane): its holder (nil when free), the highest
// epoch issued, and its waiters in grant order.
type LaneStatus struct {
	Scope   string         `json:"scope"`
	Lane    string         `json:"lane"`
	Epoch   int64          `json:"epoch"`
	Holder  *HolderStatus  `json:"holder,omitempty"`
	Waiters []WaiterStatus `json:"waiters"`
	// Waiting counts the processes that announce in the liveness locks that they
	// wait for the lane, with a queue row (Waiters) or, in the first
	// 100 ms or behind a long transaction, only registered with the
	// holder; -1 when it cannot be told (no liveness locks). At most 1,000.
	// Engine.Status does not count the calling process's own waiter.
	Waiting int `json:"waiting"`
}

// Status reads every lane of the file (rows and queue) and judges each
// holder and waiter alive or dead with the engine's evidence. It writes
// nothing.
func (e *Engine) Status(ctx context.Context) ([]LaneStatus, error) {
	var out []LaneStatus
	err := e.retryBusy(ctx, func() (err error) {
		out, err = readStatus(ctx, e.db, e.probe, e.clock, e.locks)
		return err
	})
	return out, err
}

func readStatus(ctx context.Context, db *sql.DB, probe func(holder) verdict, clock Clock, locks platform.Locks) ([]LaneStatus, error) {
	rows, err := readLanes(ctx, db)
	if err != nil {
		return nil, err
	}
	type sl struct {
		scope, lane string
		epoch       int64
	}
	var lanes []sl
	seen := map[[2]string]int{}
	for rows.Next() {
		var x sl
		if err := rows.Scan(&x.scope, &x.lane, &x.epoch); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%w: %v", ErrUntrusted, err)
		}
		k := [2]string{x.scope, x.lane}
		if i, ok := seen[k]; ok {
			if x.epoch > lanes[i].epoch {
				lanes[i].epoch = x.epoch
			}
			continue
		}
		seen[k] = len(lanes)
		lanes = append(lanes, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	now := clock.Now().UnixMilli()
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	out := make([]LaneStatus, 0, len(lanes))
	for _, x := range lanes {
		st := LaneStatus{Scope: x.scope, Lane: x.lane, Epoch: x.epoch, Waiters: []WaiterStatus{}, Waiting: -1}
		if locks != nil {
			if n, err := locks.CountWants(wantBase(x.scope, x.lane), 1000); err == nil {
				st.Waiting = n
			}
		}
		r, err := readActive(ctx, db, x.scope, x.lane)
		if err != nil {
			return nil, err
		}
		if r != nil {
			var acquired, depth int64
			if err := readHeld(ctx, db, r.id).Scan(&acquired, &depth); err != nil {
				return nil, err
			}
			v := probe(r.h)
			st.Holder = &HolderStatus{ID: r.h.ID, PID: r.h.PID, Alive: v.alive, Why: v.reason, Epoch: r.epoch,
				HeldFor: ms(now - acquired), Heartbeat: ms(now - r.heartbeat), TTL: ms(r.ttl), Depth: depth}
		}
		ws, err := readQueue(ctx, db, x.scope, x.lane)
		if err != nil {
			return nil, err
		}
		order(ws, now)
		for _, w := range ws {
			v := verdict{true, "another implementation's waiter"}
			if !w.foreign {
				v = probe(w.h)
			}
			st.Waiters = append(st.Waiters, WaiterStatus{Ticket: w.ticket, ID: w.h.ID, PID: w.h.PID,
				Priority: w.priority, Waited: ms(now - w.enqueued), Alive: v.alive, Why: v.reason})
		}
		out = append(out, st)
	}
	return out, nil
}

// Break releases the active row of (scope, lane) on behalf of an
// administrator, so a dead or hung holder stops blocking the lane. The old
// holder is fenced: its (holder, epoch) is no longer active, so its next
// fenced commit fails with ErrLost, and the next grant's epoch is higher.
// A provably live holder is refused with ErrHolderAlive unless force. It
// returns the broken holder's status, or nil when the lane was free.
func (e *Engine) Break(ctx context.Context, scope, lane string, force bool) (*HolderStatus, error) {
	return e.breakLane(ctx, scope, lane, 0, force)
}

// breakLane is Break, guarded by epoch unless it is 0 (BreakEpoch).
func (e *Engine) breakLane(ctx context.Context, scope, lane string, epoch int64, force bool) (*HolderStatus, error) {
	if e.opts.MemoryOnly {
		return nil, e.errf("break", scope, lane, ErrUnavailable, "in-memory databases have no lease rows")
	}
	var out *HolderStatus
	var ring string
	err := e.immediateOp(ctx, "break", func(ctx context.Context, c *sql.Conn) error {
		out, ring = nil, "" // this body runs again after SQLITE_BUSY
		r, err := readActive(ctx, c, scope, lane)
		if err != nil || r == nil {
			return err
		}
		v := e.probe(r.h)
		out = &HolderStatus{ID: r.h.ID, PID: r.h.PID, Alive: v.alive, Why: v.reason, Epoch: r.epoch}
		if epoch != 0 && r.epoch != epoch {
			return e.errf("break", scope, lane, ErrEpochChanged, fmt.Sprintf("epoch %d is active, not %d", r.epoch, epoch))
		}
		if v.alive && !force {
			le := e.errf("break", scope, lane, ErrHolderAlive, v.reason+"; use force to break it anyway")
			le.Holder = r.h.ID
			return le
		}
		// Hand the lane to the first live waiter, as a release would, or
		// free it; either way the old (holder, epoch) is no longer active.
		l := e.lane(scope, lane)
		hd, _, err := l.head(ctx, c, nil)
		if err != nil {
			return err
		}
		if hd != nil {
			if _, err := l.grantTo(ctx, c, hd.h, hd.ttl, grantArgs{prev: r, dequeue: true}); err != nil {
				return err
			}
			ring = hd.h.ID
			return nil
		}
		return freeRow(ctx, c, r.id, r.epoch)
	})
	if err != nil {
		return out, err
	}
	if ring != "" {
		e.bell.ringGrant(ring, scope, lane, nil)
	}
	if out != nil {
		e.stats.Breaks.Add(1)
		e.logf(slog.LevelWarn, "cleolease: lease broken", "scope", scope, "lane", lane, "holder", out.ID, "epoch", out.Epoch, "force", force)
		// If the broken holder is this very process, forget the row.
		l := e.lane(scope, lane)
		if g := l.currentRow(); g != nil && g.epoch == out.Epoch && out.ID == e.holderID {
			l.markLost(g, "broken administratively")
		}
	}
	return out, err
}
