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
	ID        string        `json:"id"` // its holder id (holder_id)
	PID       int64         `json:"pid"`
	Alive     bool          `json:"alive"`
	Liveness  string        `json:"liveness"`         // "alive", "dead" or "unknown" (the OS would not tell: reclaimed once the heartbeat is older than the TTL)
	Why       string        `json:"why"`              // the evidence behind Alive and Liveness
	Epoch     int64         `json:"epoch"`            // the fencing token of its grant
	HeldFor   time.Duration `json:"held_for_ns"`      // since it was granted the lane
	Heartbeat time.Duration `json:"heartbeat_age_ns"` // since its last heartbeat
	TTL       time.Duration `json:"ttl_ns"`           // its ttl_ms
	Depth     int64         `json:"depth"`            // its re-entrancy depth, as its heartbeat last wrote it
}

// WaiterStatus describes one waiter of a lane: a process with a queue row
// (Source "queue"), or one that has so far only registered with the
// holder, which reported it (Source "holder"; see LaneStatus).
type WaiterStatus struct {
	Ticket   int64         `json:"ticket"` // its queue row's ticket; 0 for a registration
	ID       string        `json:"id"`     // its holder id
	PID      int64         `json:"pid"`
	Priority int64         `json:"priority"` // lower is served first
	Since    time.Time     `json:"since"`    // when it began to wait
	Waited   time.Duration `json:"waited_ns"`
	// Place is its place in grant order, 1 for the next to be served,
	// when every waiting process is listed; 0 when some are not named
	// (LaneStatus.Unnamed), so the order is not fully known.
	Place    int    `json:"place,omitempty"`
	Source   string `json:"source"` // "queue" or "holder"
	Alive    bool   `json:"alive"`
	Liveness string `json:"liveness"` // "alive", "dead" or "unknown"
	Why      string `json:"why"`
}

// LaneStatus is one (scope, lane): its holder (nil when free), the highest
// epoch issued, and its waiters in grant order.
//
// A waiter writes its queue row only once SQLite's write lock is free:
// while the holder is inside a write transaction a waiter has only
// registered with the holder (over the doorbell), and the status reader
// asks the holder for those registrations, so they are listed too. A
// holder that is stopped, or has no doorbell, cannot answer: its waiters
// are then counted (Waiting, Unnamed) but not named, and Note says why.
type LaneStatus struct {
	Scope   string         `json:"scope"`
	Lane    string         `json:"lane"`
	Epoch   int64          `json:"epoch"`
	Holder  *HolderStatus  `json:"holder,omitempty"`
	Waiters []WaiterStatus `json:"waiters"`
	// Waiting counts the processes that announce in the liveness locks
	// that they wait for the lane, named in Waiters or not; -1 when it
	// cannot be told (the platform, or the engine, keeps no liveness
	// locks). At most 1,000. Engine.Status does not count the calling
	// process's own waiter; Inspect counts 0 when the liveness locks'
	// files do not exist (no process has the database open).
	Waiting int `json:"waiting"`
	// Unnamed counts the waiting processes Waiters does not name.
	Unnamed int `json:"unnamed"`
	// Note says why waiters are missing from Waiters, if any are.
	Note string `json:"note,omitempty"`
}

// Status reads every lane of the file (rows and queue), asks each live
// holder for the waiters that registered with it (see LaneStatus), and
// judges each holder and waiter alive or dead with the engine's evidence.
// It writes nothing to the database.
func (e *Engine) Status(ctx context.Context) ([]LaneStatus, error) {
	var out []LaneStatus
	ask := func(qs []holderQuery) (map[laneKey]*holderAnswer, string) {
		if e.opts.MemoryOnly {
			return nil, ""
		}
		return askHolders(e.base, platform.FileID{Dev: e.dev, Ino: e.ino}, qs, holderAnswerWait)
	}
	err := e.retryBusy(ctx, func() (err error) {
		out, err = readStatus(ctx, e.db(), e.probe, e.clock, e.locks, ask)
		return err
	})
	return out, err
}

// laneRead is what readStatus reads of one lane from the database.
type laneRead struct {
	st LaneStatus
	ws []queued
}

// readStatus reads every lane from db, then asks the lanes' live holders
// who waits (ask; nil asks nobody), then orders each lane's waiters.
func readStatus(ctx context.Context, db *sql.DB, probe func(holder) verdict, clock Clock, locks platform.Locks,
	ask func([]holderQuery) (map[laneKey]*holderAnswer, string)) ([]LaneStatus, error) {
	rows, err := readLanes(ctx, db)
	if missingTable(err) {
		return []LaneStatus{}, nil // dropped: no lane has a row (the next write recreates them)
	}
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
	reads := make([]laneRead, 0, len(lanes))
	var qs []holderQuery
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
			st.Holder = &HolderStatus{ID: r.h.ID, PID: r.h.PID, Alive: v.alive(), Liveness: v.state.String(), Why: v.reason, Epoch: r.epoch,
				HeldFor: ms(now - acquired), Heartbeat: ms(now - r.heartbeat), TTL: ms(r.ttl), Depth: depth}
			if !v.dead() && st.Waiting != 0 {
				qs = append(qs, holderQuery{id: r.h.ID, scope: x.scope, lane: x.lane})
			}
		}
		ws, err := readQueue(ctx, db, x.scope, x.lane)
		if err != nil {
			return nil, err
		}
		reads = append(reads, laneRead{st: st, ws: ws})
	}
	// Every read is done: a holder's answer cannot be outdated by a
	// retry after SQLITE_BUSY.
	var answers map[laneKey]*holderAnswer
	var note string
	if ask != nil {
		answers, note = ask(qs)
	}
	out := make([]LaneStatus, 0, len(reads))
	for _, rd := range reads {
		st, ws := rd.st, rd.ws
		base := wantBase(st.Scope, st.Lane)
		a := answers[laneKey{st.Scope, st.Lane}]
		if a != nil {
			var regs []registration
			for _, r := range a.regs {
				if r.Scope != st.Scope || r.Lane != st.Lane {
					continue
				}
				if locks != nil && r.Slot > 0 {
					if w, err := locks.Wants(base, r.Slot); err == nil && !w {
						continue // gave up since it registered
					}
				}
				regs = append(regs, r)
			}
			ws = withRegistrations(ws, regs)
		}
		order(ws, now)
		named := 0
		for _, w := range ws {
			v := aliveBecause("another implementation's waiter")
			if !w.foreign {
				v = probe(w.h)
			}
			src := "queue"
			if !w.row {
				src = "holder"
			}
			if v.alive() && !w.foreign {
				named++
			}
			st.Waiters = append(st.Waiters, WaiterStatus{Ticket: w.ticket, ID: w.h.ID, PID: w.h.PID,
				Priority: w.priority, Since: time.UnixMilli(w.enqueued), Waited: ms(now - w.enqueued),
				Source: src, Alive: v.alive(), Liveness: v.state.String(), Why: v.reason})
		}
		if st.Waiting > named {
			st.Unnamed = st.Waiting - named
		}
		switch {
		case st.Unnamed == 0:
			for i := range st.Waiters {
				st.Waiters[i].Place = i + 1
			}
		case note != "":
			st.Note = note
		case a != nil && !a.answered:
			st.Note = a.why
		case st.Holder == nil:
			st.Note = "the lane has no holder to ask; its waiters write their queue rows at their next look"
		case st.Holder.Liveness == "dead":
			st.Note = "the holder is dead; its waiters write their queue rows when they reclaim the lane"
		default:
			st.Note = "not registered with the holder (yet): they appear once they register or write their queue rows"
		}
		if st.Unnamed > 0 {
			st.Note = fmt.Sprintf("%d waiting process(es) not named: %s", st.Unnamed, st.Note)
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
	e.listenLate() // it may ring a waiter
	var out *HolderStatus
	var ring string
	err := e.immediateOp(ctx, "break", func(ctx context.Context, c *sql.Conn) error {
		out, ring = nil, "" // this body runs again after SQLITE_BUSY
		r, err := readActive(ctx, c, scope, lane)
		if err != nil || r == nil {
			return err
		}
		v := e.probe(r.h)
		out = &HolderStatus{ID: r.h.ID, PID: r.h.PID, Alive: v.alive(), Liveness: v.state.String(), Why: v.reason, Epoch: r.epoch}
		if epoch != 0 && r.epoch != epoch {
			return e.errf("break", scope, lane, ErrEpochChanged, fmt.Sprintf("epoch %d is active, not %d", r.epoch, epoch))
		}
		if v.alive() && !force {
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
			l.markLost(g, "the lane was broken administratively (Break)")
		}
	}
	return out, err
}
