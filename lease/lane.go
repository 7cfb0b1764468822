package lease

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// AgingStep is how fast a waiter's effective priority improves: one point
// per AgingStep waited. A waiter of priority p is therefore overtaken by
// newcomers of a better priority q < p for at most (p-q)·AgingStep (plus
// the service time of those already ahead of it), e.g. 10 s for the
// default 100 against a cold open's 0.
const AgingStep = 100 * time.Millisecond

// AcquireOptions are the per-call settings of Acquire.
type AcquireOptions struct {
	// Priority orders the cross-process queue: lower is served first.
	Priority int
	// Wait bounds the wait for a grant; at the bound Acquire degrades
	// (Require false) or fails with ErrUnavailable (Require true). A
	// context deadline or cancellation is never turned into either.
	Wait time.Duration
	// Require selects failing over degrading at the wait bound.
	Require bool
}

// grant is this process's ownership of a lane's active row.
type grant struct {
	id, epoch int64
	at        time.Time // when this process got the row (slice accounting)
	lost      atomic.Bool
	// given is set by handOff just before it commits releasing or handing
	// over the row (cleared if that fails): a heartbeat racing with it then
	// finds the row gone, and must not call the grant lost.
	given atomic.Bool
}

// laneState is one (scope, lane) of an Engine: the in-process FIFO gate,
// the row this process holds (if any), and its linger watcher.
type laneState struct {
	e            *Engine
	scope, lane  string
	want         int64 // first byte of the lane's region of waiters' bytes in the sidecar
	mu           sync.Mutex
	busy         bool      // the gate is owned
	waiters      list.List // of *gateWaiter
	row          *grant    // nil: this process does not hold the row
	depth        int       // nesting of the current hold
	idleSince    time.Time
	watching     bool
	kick         chan struct{} // wakes the watcher when the gate frees
	closing      bool
	memEpoch     int64
	wantLocked   bool
	rung         string       // the holder the claim in progress told it waits
	rungEpoch    int64        // the epoch at which the row named it (0: unknown)
	wroteRow     bool         // the claim in progress ran a claim transaction (which queues)
	registered   bool         // and that holder's engine received the registration
	claiming     bool         // a claim is in progress; guarded by mu
	incoming     bool         // a grant to that claim arrived; guarded by mu
	passedTo     string       // the holder this process last handed the lane to; guarded by mu
	seenGrants   int64        // the doorbell's grant count at the claim's last look
	looks        atomic.Int64 // requests to look at this lane (see lookArrived)
	seenLooks    int64        // looks at the claim's last look
	reg          registration
	pending      map[string]registration // waiters that told us they wait, by holder id
	lastWaitInfo string                  // the holder that kept the lane, for errors; guarded by mu
}

type gateWaiter struct {
	ch      chan struct{}
	granted bool
}

func newLane(e *Engine, scope, lane string) *laneState {
	return &laneState{e: e, scope: scope, lane: lane, want: wantBase(scope, lane), kick: make(chan struct{}, 1)}
}

// wantBase is the first byte of the lane's region of want bytes in the
// sidecar (see wantBits).
func wantBase(scope, lane string) int64 {
	h := fnv.New64a()
	h.Write([]byte(scope + "\x00" + lane))
	return 1<<47 + int64(h.Sum64()%(1<<16))<<wantBits
}

// enter waits for the in-process gate in arrival order.
func (l *laneState) enter(ctx context.Context, bound <-chan time.Time) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return l.e.errf("acquire", l.scope, l.lane, ErrClosed, "")
	}
	if !l.busy && l.waiters.Len() == 0 {
		l.busy = true
		l.mu.Unlock()
		return nil
	}
	w := &gateWaiter{ch: make(chan struct{})}
	el := l.waiters.PushBack(w)
	l.mu.Unlock()
	var err error
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-bound:
		err = errWaitBound
	}
	l.mu.Lock()
	if w.granted { // granted as we gave up: pass it on
		l.leaveLocked()
	} else {
		l.waiters.Remove(el)
	}
	l.mu.Unlock()
	return err
}

// tryEnter takes the gate only if it is free and nobody queues for it.
func (l *laneState) tryEnter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy || l.waiters.Len() > 0 {
		return false
	}
	l.busy = true
	return true
}

func (l *laneState) leave() {
	l.mu.Lock()
	l.leaveLocked()
	l.mu.Unlock()
}

func (l *laneState) leaveLocked() {
	if front := l.waiters.Front(); front != nil {
		w := l.waiters.Remove(front).(*gateWaiter)
		w.granted = true
		close(w.ch)
		return
	}
	l.busy = false
	l.idleSince = time.Now()
	if l.row != nil && !l.closing && !l.e.opts.MemoryOnly {
		l.startWatcherLocked()
	}
}

// startWatcherLocked starts the linger watcher, or wakes it if it runs;
// l.mu is held.
func (l *laneState) startWatcherLocked() {
	if !l.watching {
		l.watching = true
		l.e.wg.Add(1)
		go l.watch()
		return
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *laneState) hasWaiters() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiters.Len() > 0
}

func (l *laneState) setRow(g *grant) {
	l.mu.Lock()
	l.row, l.incoming = g, false
	if g != nil {
		l.passedTo = ""
	}
	l.mu.Unlock()
}

func (l *laneState) currentRow() *grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.row
}

func (l *laneState) markLost(g *grant, why string) {
	if g.lost.CompareAndSwap(false, true) {
		l.e.stats.Lost.Add(1)
		l.e.logf(slog.LevelWarn, "cleolease: lease lost", "scope", l.scope, "lane", l.lane, "epoch", g.epoch, "reason", why)
	}
	l.mu.Lock()
	if l.row == g {
		l.row = nil
	}
	l.mu.Unlock()
	l.forwardPending("") // another process has the lane: its waiters look
}

// Acquire waits for the writer lease of (scope, lane) and returns a Hold.
//
// If ctx carries a live Hold on the same lane (WithHold), the result
// re-enters it at once. Otherwise the caller queues behind earlier writers
// of this process, then — unless this process still holds the row — behind
// earlier waiters of other processes. Errors: ctx.Err() wrapped in *Error
// when the context ends first (no queue row is left behind and no grant is
// made); *Error wrapping ErrUnavailable at the wait bound when
// opts.Require; ErrFileChanged when the file was replaced; ErrUntrusted
// for tables it cannot trust. At the wait bound without Require the result
// is a degraded Hold (Degraded() true, Epoch 0), logged and counted.
func (e *Engine) Acquire(ctx context.Context, scope, lane string, opts AcquireOptions) (*Hold, error) {
	if root := HoldFrom(ctx, e, scope, lane); root != nil {
		root.l.mu.Lock()
		root.l.depth++
		root.l.mu.Unlock()
		return &Hold{l: root.l, g: root.g, root: root}, nil
	}
	if err := e.checkFile(false); err != nil {
		return nil, err
	}
	l := e.lane(scope, lane)
	start := time.Now()
	var bound <-chan time.Time
	if opts.Wait >= 0 {
		t := time.NewTimer(opts.Wait)
		defer t.Stop()
		bound = t.C
	}
	if err := l.enter(ctx, bound); err != nil {
		if err == errWaitBound {
			return l.unavailable(ctx, opts, false)
		}
		return nil, l.ctxErr(err)
	}
	g, claimed, err := l.ensureRow(ctx, bound, opts)
	if err != nil {
		if err == errWaitBound {
			return l.unavailable(ctx, opts, true)
		}
		l.leave()
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, l.ctxErr(err)
		}
		return nil, err
	}
	l.mu.Lock()
	l.depth = 1
	l.mu.Unlock()
	e.stats.Grants.Add(1)
	e.stats.observeWait(time.Since(start))
	return &Hold{l: l, g: g, gateHeld: true, claimed: claimed}, nil
}

func (l *laneState) ctxErr(err error) error {
	return l.e.errf("acquire", l.scope, l.lane, err, "context ended while waiting")
}

func (l *laneState) unavailable(ctx context.Context, opts AcquireOptions, gateHeld bool) (*Hold, error) {
	l.mu.Lock()
	who := l.lastWaitInfo
	l.mu.Unlock()
	if opts.Require {
		if gateHeld {
			l.leave()
		}
		l.e.stats.Unavailable.Add(1)
		err := l.e.errf("acquire", l.scope, l.lane, ErrUnavailable,
			fmt.Sprintf("mode=require: a live holder did not release within %s", opts.Wait))
		err.Holder = who
		return nil, err
	}
	l.e.stats.Degraded.Add(1)
	l.e.logf(slog.LevelWarn, "cleolease: degraded grant: proceeding without the writer lease",
		"scope", l.scope, "lane", l.lane, "waited", opts.Wait, "holder", who)
	return &Hold{l: l, gateHeld: gateHeld}, nil
}

// ensureRow makes this process the holder of the lane's row; the caller
// owns the gate.
func (l *laneState) ensureRow(ctx context.Context, bound <-chan time.Time, opts AcquireOptions) (g *grant, claimed bool, err error) {
	if g := l.currentRow(); g != nil {
		if !g.lost.Load() {
			l.e.stats.FastGrants.Add(1)
			return g, false, nil
		}
		l.setRow(nil)
	}
	if l.e.opts.MemoryOnly {
		l.memEpoch++
		g := &grant{epoch: l.memEpoch, at: time.Now()}
		l.setRow(g)
		return g, false, nil
	}
	if err := l.e.CheckFile(); err != nil {
		return nil, false, err
	}
	g, err = l.claim(ctx, bound, opts)
	if err != nil {
		return nil, false, err
	}
	l.setRow(g)
	l.e.logf(slog.LevelDebug, "cleolease: lease acquired", "scope", l.scope, "lane", l.lane, "epoch", g.epoch)
	return g, true, nil
}

// row is an active _writer_leases row as read back.
type row struct {
	id, epoch, heartbeat, ttl int64
	h                         holder
}

// queued is a waiter: a _writer_queue row, or a registration the holder
// received that has no row (ticket 0, row false).
type queued struct {
	ticket, priority, enqueued, ttl int64
	arrival                         int64 // 0 when the row has none
	h                               holder
	foreign                         bool // written by another implementation (no holder_pid)
	row                             bool // has a _writer_queue row
}

const activeSQL = `SELECT id, holder_id, holder_pid, epoch, heartbeat_at, ttl_ms, coalesce(holder_start, ''), coalesce(holder_slot, 0),
	typeof(holder_id) = 'text' AND typeof(epoch) = 'integer'
FROM _writer_leases WHERE scope = ? AND lane = ? AND active = 1 LIMIT 2`

func readActive(ctx context.Context, q querier, scope, lane string) (*row, error) {
	rows, err := q.QueryContext(ctx, activeSQL, scope, lane)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r := &row{}
		var typed bool
		if err := rows.Scan(&r.id, &r.h.ID, &r.h.PID, &r.epoch, &r.heartbeat, &r.ttl, &r.h.Start, &r.h.Slot, &typed); err != nil {
			return nil, fmt.Errorf("%w: unreadable _writer_leases row: %v", ErrUntrusted, err)
		}
		// The guarded UPDATEs compare holder_id and epoch with what was
		// read: a number stored as text (or the reverse) would never match.
		if !typed {
			return nil, fmt.Errorf("%w: active row of %s/%s has holder_id or epoch of the wrong type", ErrUntrusted, scope, lane)
		}
		if r.epoch <= 0 || r.epoch >= 1<<62 {
			return nil, fmt.Errorf("%w: active row of %s/%s has epoch %d, out of range", ErrUntrusted, scope, lane, r.epoch)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch len(out) {
	case 0:
		return nil, nil
	case 1:
		return out[0], nil
	}
	return nil, fmt.Errorf("%w: two active rows for %s/%s (is ux_writer_leases_active intact?)", ErrUntrusted, scope, lane)
}

func readQueue(ctx context.Context, q querier, scope, lane string) ([]queued, error) {
	rows, err := q.QueryContext(ctx, `SELECT ticket, holder_id, priority, enqueued_at, holder_pid IS NULL,
		coalesce(holder_pid, 0), coalesce(holder_start, ''), coalesce(holder_slot, 0), coalesce(ttl_ms, 0), coalesce(arrival, 0)
		FROM _writer_queue WHERE scope = ? AND lane = ? ORDER BY ticket`, scope, lane)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queued
	for rows.Next() {
		var w queued
		if err := rows.Scan(&w.ticket, &w.h.ID, &w.priority, &w.enqueued, &w.foreign, &w.h.PID, &w.h.Start, &w.h.Slot, &w.ttl, &w.arrival); err != nil {
			return nil, fmt.Errorf("%w: unreadable _writer_queue row: %v", ErrUntrusted, err)
		}
		w.row = true
		out = append(out, w)
	}
	return out, rows.Err()
}

// order sorts waiters into grant order: effective priority (priority minus
// one point per AgingStep waited), then arrival (the sidecar counter taken
// when the waiter arrived) where both rows have one, else ticket.
func order(ws []queued, nowMS int64) {
	eff := func(w queued) int64 {
		waited := nowMS - w.enqueued
		if waited < 0 {
			waited = 0
		}
		return w.priority - waited/AgingStep.Milliseconds()
	}
	sort.SliceStable(ws, func(i, j int) bool {
		a, b := eff(ws[i]), eff(ws[j])
		if a != b {
			return a < b
		}
		if ws[i].arrival > 0 && ws[j].arrival > 0 {
			return ws[i].arrival < ws[j].arrival
		}
		return ws[i].ticket < ws[j].ticket
	})
}

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

// withRegistrations adds to the queue rows ws the registrations of waiters
// that have none.
func withRegistrations(ws []queued, regs []registration) []queued {
	for _, r := range regs {
		if !slices.ContainsFunc(ws, func(w queued) bool { return w.h.ID == r.ID }) {
			ws = append(ws, queued{priority: r.Priority, enqueued: r.Enqueued, ttl: r.TTL, arrival: r.Arrival,
				h: holder{ID: r.ID, PID: r.PID, Start: r.Start, Slot: r.Slot}})
		}
	}
	return ws
}

// first is head for the waiters ws; c may be nil when none has a row.
// Waiters are judged by stillWaiting (a registration must prove it waits).
func (l *laneState) first(ctx context.Context, c *sql.Conn, ws []queued) (hd *queued, gone []string, err error) {
	order(ws, l.e.nowMS())
	for i := range ws {
		w := &ws[i]
		if w.foreign {
			continue
		}
		if w.h.ID == l.e.holderID {
			return w, gone, nil
		}
		if v := l.e.probe(w.h); !v.alive || !l.stillWaiting(w.h, w.row) {
			// Dead, or alive but no longer waiting (it gave up): never
			// grant to it, or the lane would sit with a holder that does
			// not know it holds it.
			if w.row && c != nil {
				if _, err := c.ExecContext(ctx, `DELETE FROM _writer_queue WHERE ticket = ?`, w.ticket); err != nil {
					return nil, nil, err
				}
			}
			gone = append(gone, w.h.ID)
			continue
		}
		return w, gone, nil
	}
	return nil, gone, nil
}

// grantArgs says how grantTo makes a waiter the holder.
type grantArgs struct {
	// prev is the active row being handed over or reclaimed, rewritten in
	// place; nil reuses the newest released row, or inserts one.
	prev *row
	// dequeue removes the waiter's queue rows (it may have some).
	dequeue bool
	// ifQueueEmpty grants only if the lane's queue has no row and no row
	// of the lane has a higher epoch than prev (with prev only;
	// errLostRow otherwise, as when prev changed).
	ifQueueEmpty bool
}

// grantTo makes h (a waiter, possibly this process) the holder of the lane
// with the next epoch; the caller is inside BEGIN IMMEDIATE. When a.prev
// is set, that row is rewritten in place, guarded by its holder and epoch
// (errLostRow if it changed); otherwise the newest released row is reused,
// or a row inserted. Either way one row per lane carries the high-water
// epoch, so epochs never go back and the table does not grow.
func (l *laneState) grantTo(ctx context.Context, c *sql.Conn, h holder, ttl int64, a grantArgs) (*grant, error) {
	prev := a.prev
	now := l.e.nowMS()
	if ttl <= 0 {
		ttl = l.e.opts.TTL.Milliseconds()
	}
	var slot, start any
	if h.Slot > 0 {
		slot = h.Slot
	}
	if h.Start != "" {
		start = h.Start
	}
	const fields = `holder_id = ?3, holder_pid = ?4, acquired_at = ?5, heartbeat_at = ?5, ttl_ms = ?6,
		reentrancy_depth = 1, active = 1, holder_start = ?7, holder_slot = ?8`
	const set = fields + `,
		epoch = (SELECT min(coalesce(max(epoch), 0), 4611686018427387903) FROM _writer_leases WHERE scope = ?1 AND lane = ?2 AND typeof(epoch) = 'integer') + 1`
	args := []any{l.scope, l.lane, h.ID, h.PID, now, ttl, start, slot}
	var g grant
	var err error
	if prev != nil {
		guard := ""
		if a.ifQueueEmpty {
			guard = ` AND NOT EXISTS (SELECT 1 FROM _writer_queue WHERE scope = ?1 AND lane = ?2)`
		}
		args = append(args, prev.id, prev.h.ID, prev.epoch)
		// The common case: no row of the lane carries a higher epoch than
		// prev, so the next one is prev's + 1. Checked in the statement,
		// which is several times cheaper than the max() subquery in SET.
		err = c.QueryRowContext(ctx, `UPDATE _writer_leases SET `+fields+`, epoch = ?11 + 1
			WHERE id = ?9 AND holder_id = ?10 AND epoch = ?11 AND active = 1`+guard+`
			AND NOT EXISTS (SELECT 1 FROM _writer_leases WHERE scope = ?1 AND lane = ?2 AND epoch > ?11)
			RETURNING id, epoch`, args...).Scan(&g.id, &g.epoch)
		if err == sql.ErrNoRows && !a.ifQueueEmpty {
			err = c.QueryRowContext(ctx, `UPDATE _writer_leases SET `+set+`
				WHERE id = ?9 AND holder_id = ?10 AND epoch = ?11 AND active = 1 RETURNING id, epoch`,
				args...).Scan(&g.id, &g.epoch)
		}
		if err == sql.ErrNoRows {
			return nil, errLostRow
		}
	} else {
		err = c.QueryRowContext(ctx, `UPDATE _writer_leases SET `+set+`
			WHERE id = (SELECT id FROM _writer_leases WHERE scope = ?1 AND lane = ?2 AND active = 0 ORDER BY epoch DESC LIMIT 1)
			RETURNING id, epoch`, args...).Scan(&g.id, &g.epoch)
		if err == sql.ErrNoRows {
			err = c.QueryRowContext(ctx, `INSERT INTO _writer_leases
				(scope, lane, holder_id, holder_pid, acquired_at, heartbeat_at, ttl_ms, reentrancy_depth, active, holder_start, holder_slot, epoch)
				VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, 1, 1, ?7, ?8,
					(SELECT min(coalesce(max(epoch), 0), 4611686018427387903) FROM _writer_leases WHERE scope = ?1 AND lane = ?2 AND typeof(epoch) = 'integer') + 1)
				RETURNING id, epoch`, args...).Scan(&g.id, &g.epoch)
		}
	}
	if err != nil {
		return nil, err
	}
	if g.epoch <= 0 || g.epoch >= 1<<62 {
		return nil, fmt.Errorf("%w: epoch %d out of range", ErrUntrusted, g.epoch)
	}
	if a.dequeue {
		if _, err := c.ExecContext(ctx, `DELETE FROM _writer_queue WHERE scope = ? AND lane = ? AND holder_id = ?`, l.scope, l.lane, h.ID); err != nil {
			return nil, err
		}
	}
	g.at = time.Now()
	return &g, nil
}

func (l *laneState) me() holder {
	var slot int64
	if l.e.side != nil {
		slot = l.e.side.slot
	}
	return holder{ID: l.e.holderID, PID: l.e.pid, Start: l.e.start, Slot: slot}
}

// reclaimable reports whether an active row of another holder may be
// taken over, and why.
func (l *laneState) reclaimable(r *row) (bool, string) {
	v := l.e.probe(r.h)
	info := fmt.Sprintf("%s (pid %d, epoch %d): %s", r.h.ID, r.h.PID, r.epoch, v.reason)
	l.mu.Lock()
	l.lastWaitInfo = info // read by waiters that give up at the gate
	l.mu.Unlock()
	if !v.alive {
		return true, "dead"
	}
	if l.e.opts.StealAfterTTL && r.ttl > 0 && l.e.nowMS()-r.heartbeat > r.ttl {
		return true, "ttl"
	}
	return false, ""
}

// attempt is one claim transaction (a single try: SQLITE_BUSY comes back).
// It returns a grant when this process is now the holder; otherwise it
// makes sure this process is queued with its registration l.reg (and, when
// the row is free or its holder dead, hands it to the queue's head), and
// returns the active holder's id.
func (l *laneState) attempt(ctx context.Context) (g *grant, holderID string, err error) {
	var rang string
	defer func() {
		if rang != "" {
			l.e.bell.ringGrant(rang, l.scope, l.lane, nil)
		}
	}()
	err = l.e.tryImmediate(ctx, "claim", func(bg context.Context, c *sql.Conn) error {
		g, rang, holderID = nil, "", ""
		active, err := readActive(bg, c, l.scope, l.lane)
		if err != nil {
			return err
		}
		me := l.me()
		if active != nil && active.h.ID == me.ID {
			// Handed to us by the previous holder.
			if _, err := c.ExecContext(bg, `DELETE FROM _writer_queue WHERE scope = ? AND lane = ? AND holder_id = ?`, l.scope, l.lane, me.ID); err != nil {
				return err
			}
			g = &grant{id: active.id, epoch: active.epoch, at: time.Now()}
			return nil
		}
		// Waiters that told us they wait get their place before we decide.
		if err := l.flushPending(bg, c); err != nil {
			return err
		}
		free := active == nil
		var prev *row
		if !free {
			ok, why := l.reclaimable(active)
			if ok {
				l.e.stats.reclaimed(why)
				l.e.logf(slog.LevelWarn, "cleolease: lease reclaimed", "scope", l.scope, "lane", l.lane,
					"from", active.h.ID, "pid", active.h.PID, "epoch", active.epoch, "reason", why)
				free, prev = true, active
			}
		}
		if free {
			// The order is decided here, in the same transaction as the grant.
			hd, _, err := l.head(bg, c, nil)
			if err != nil {
				return err
			}
			if hd == nil || hd.h.ID == me.ID {
				l.e.stats.Claims.Add(1)
				g, err = l.grantTo(bg, c, me, l.e.opts.TTL.Milliseconds(), grantArgs{prev: prev, dequeue: true})
				return err
			}
			// Someone else is first in line: give it the lane now.
			if _, err := l.grantTo(bg, c, hd.h, hd.ttl, grantArgs{prev: prev, dequeue: true}); err != nil {
				return err
			}
			l.e.stats.Handoffs.Add(1)
			rang = hd.h.ID
		} else {
			holderID = active.h.ID
		}
		// Queue, unless already queued. The statement is short on purpose:
		// this transaction competes for the write lock with the holder's.
		if err := l.e.fault("enqueue"); err != nil {
			return err
		}
		return enqueue(bg, c, l.scope, l.lane, l.reg, l.e.nowMS())
	})
	return g, holderID, err
}

// FallbackPoll bounds how long a waiter sleeps between looks at the lane
// when the doorbell stays silent, unless RegisteredPoll applies.
const FallbackPoll = 5 * time.Millisecond

// RegisteredPoll replaces FallbackPoll while the lane's live holder has
// this waiter's registration and the kernel reports exits (inotify): the
// holder (or the holder it passes the registration on to) rings when it
// grants or frees the lane, and a crashed holder's exit rings too, so the
// fallback only covers what neither reports (a Break from another
// process, say). Polling less leaves the CPU to the holder.
const RegisteredPoll = 50 * time.Millisecond

// claim acquires the row across processes. A waiter that reaches the live
// holder with its registration waits without writing; otherwise (or after
// SelfEnqueueAfter, or when sent back) it runs a claim transaction, which
// queues it. Then it reads the active row each time the doorbell rings or
// its fallback period ends (pollPeriod), until the row is handed to it,
// falls free, or its holder is found dead.
func (l *laneState) claim(ctx context.Context, bound <-chan time.Time, opts AcquireOptions) (g *grant, err error) {
	defer l.unlockWant()
	l.mu.Lock()
	l.claiming = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.claiming = false
		if g == nil {
			l.incoming = false
		}
		l.mu.Unlock()
	}()
	fallback := time.NewTimer(FallbackPoll)
	defer fallback.Stop()
	// Take a place in line and announce the wait before touching SQLite:
	// the queue row can only be written once the holder's transaction ends,
	// and by then the holder must already know to hand over.
	var arrival int64
	if l.e.side != nil {
		arrival = l.e.side.nextTicket()
	}
	l.lockWant()
	me := l.me()
	l.reg = registration{Scope: l.scope, Lane: l.lane, ID: me.ID, Start: me.Start, PID: me.PID, Slot: me.Slot,
		Priority: int64(opts.Priority), Arrival: arrival, TTL: l.e.opts.TTL.Milliseconds(), Enqueued: l.e.nowMS()}
	// When a live holder got the registration, the first claim
	// transaction is skipped: the holder orders the registration in the
	// transaction that hands the lane over (and passes it on to the next
	// holder if it is not served yet), so the waiter does not compete with
	// the holder (or the next holder) for SQLite's write lock. It writes
	// its own queue row only when the lane falls free, its holder dies, or
	// after SelfEnqueueAfter (so that Status shows it).
	l.seenGrants, l.seenLooks = l.e.bell.granted.Load(), l.looks.Load() // a ring from now on makes await look
	l.wroteRow = false
	skip := l.ringHolder(ctx)
	selfEnqueue := time.Now().Add(SelfEnqueueAfter)
	// A claim transaction is tried once at a time: while SQLite's write
	// lock is taken (the holder's own transaction), the waiter waits for
	// the doorbell like any queued waiter — the holder knows its
	// registration and may hand it the lane meanwhile — and
	// tries again after a capped back-off.
	bo := backoff{min: 20 * time.Microsecond, max: time.Millisecond}
	for {
		var g *grant
		var holderID string
		var err error
		if skip {
			holderID = l.rung
		} else {
			g, holderID, err = l.attempt(ctx)
			if err == nil || !isBusy(err) {
				l.wroteRow = true // (or may have: see quit)
			}
		}
		retryIn := time.Duration(0)
		if skip {
			skip, retryIn = false, max(time.Until(selfEnqueue), time.Microsecond)
		}
		switch {
		case err != nil && isBusy(err) && ctx.Err() == nil:
			retryIn = bo.next()
		case err != nil:
			if ctx.Err() != nil {
				return l.abandon(ctx, ctx.Err())
			}
			return l.abandonWith(ctx, err)
		case g != nil:
			return g, nil
		default:
			bo.reset()
		}
		if holderID != "" && holderID != l.rung {
			l.rung, l.rungEpoch = holderID, 0
			l.registered = l.e.bell.ringWaiting(holderID, l.reg) // a lingering holder hands over at once
		}
		g, retry, err := l.await(ctx, bound, fallback, retryIn)
		if g != nil || !retry {
			return g, err
		}
	}
}

// await waits, queued, until the lane is handed to us (a grant), falls
// free or its holder is found dead (retry: attempt a claim again), or the
// context or wait bound ends the wait (an error, after leaving the queue).
// It reads the active row only when the doorbell names us, a process
// exited, or the fallback period passed.
func (l *laneState) await(ctx context.Context, bound <-chan time.Time, fallback *time.Timer, retryIn time.Duration) (g *grant, retry bool, err error) {
	look, nudged := true, false
	var again <-chan time.Time
	if retryIn > 0 {
		t := time.NewTimer(retryIn)
		defer t.Stop()
		again = t.C
	}
	for {
		bell := l.e.bell.wait()
		closes, granted, looks := l.e.bell.closes.Load(), l.e.bell.granted.Load(), l.looks.Load()
		if granted != l.seenGrants {
			look = true // rung since the last look (perhaps before this wait began)
		}
		if looks != l.seenLooks {
			// A process that had our registration and did not hold the
			// lane sent us to look.
			look, nudged = true, true
		}
		l.seenGrants, l.seenLooks = granted, looks
		if look {
			var r *row
			err := l.e.fault("look")
			if err == nil {
				err = l.e.checkFile(false) // see tryImmediate
			}
			if err == nil {
				// Detached: the select below watches ctx, and a
				// cancellable context costs a goroutine per query.
				r, err = readActive(context.WithoutCancel(ctx), l.e.db, l.scope, l.lane)
			}
			switch {
			case err != nil && ctx.Err() != nil:
				g, err := l.abandon(ctx, ctx.Err())
				return g, false, err
			case err != nil && !isBusy(err):
				g, err := l.abandonWith(ctx, err)
				return g, false, err
			case err != nil: // SQLITE_BUSY: look again later
			case r != nil && r.h.ID == l.e.holderID:
				// Handed to us inside the previous holder's transaction,
				// which also removed our queue row.
				return &grant{id: r.id, epoch: r.epoch, at: time.Now()}, false, nil
			case r == nil:
				return nil, true, nil
			default:
				if ok, _ := l.reclaimable(r); ok {
					return nil, true, nil
				}
				switch {
				case nudged && r.h.ID == l.rung && r.epoch == l.rungEpoch:
					// Sent back by the holder the row names, at the same
					// epoch (it does not know it holds the lane yet, or
					// any more): write our own queue row instead of
					// ringing it again.
					l.registered = false
					return nil, true, nil
				case r.h.ID != l.rung || nudged:
					// A new holder, or one that was not holding yet when
					// our registration reached it: tell it someone waits.
					l.rung, l.rungEpoch = r.h.ID, r.epoch
					l.registered = l.e.bell.ringWaiting(r.h.ID, l.reg)
				}
			}
			fallback.Reset(l.pollPeriod())
		}
		select {
		case <-bell:
			nudged = l.looks.Load() != looks
			look = !l.e.bell.watched() || nudged || l.e.bell.granted.Load() != granted || l.e.bell.closes.Load() != closes
		case <-fallback.C:
			look, nudged = true, false
		case <-again:
			return nil, true, nil
		case <-ctx.Done():
			g, err := l.abandon(ctx, ctx.Err())
			return g, false, err
		case <-bound:
			g, err := l.abandon(ctx, errWaitBound)
			return g, false, err
		}
	}
}

// SelfEnqueueAfter is how long a waiter whose registration reached the
// holder relies on the registration alone before it also writes its own
// queue row (which Status and other implementations see).
const SelfEnqueueAfter = 100 * time.Millisecond

// ringHolder tells the lane's holder, if another process holds it, that
// this process waits, and reports whether that holder is alive and
// received the registration.
func (l *laneState) ringHolder(ctx context.Context) bool {
	ctx = context.WithoutCancel(ctx)
	r, err := readActive(ctx, l.e.db, l.scope, l.lane)
	if err != nil || r == nil {
		return false // free (or unreadable): the claim transaction decides
	}
	if r.h.ID == l.e.holderID {
		return false
	}
	l.rung, l.rungEpoch = r.h.ID, r.epoch
	l.registered = l.e.bell.ringWaiting(r.h.ID, l.reg)
	dead, _ := l.reclaimable(r)
	return l.registered && !dead
}

// pollPeriod is how long the waiter's fallback period is now.
func (l *laneState) pollPeriod() time.Duration {
	if l.registered && l.e.bell.exitsWatched() {
		return RegisteredPoll
	}
	return FallbackPoll
}

// registered records a waiter's registration (see registration) while
// this process holds the lane or is being granted it, or when it came
// with a grant to this process (withGrant); otherwise it passes it on to
// the process it handed the lane to (once), or tells the waiter to look
// again. A registration that this implementation would not send (no
// liveness slot matching its id, no start identity) is dropped, and one
// for a lane this process never used creates no state (the doorbell only
// listens to processes of this user, but a datagram is never trusted to
// size this process's memory).
func (e *Engine) registered(r registration, withGrant bool) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if r.ID == e.holderID || r.Slot <= 0 || r.Slot != slotFor(r.ID) || r.Start == "" {
		return // not a registration this implementation sends
	}
	l := e.knownLane(r.Scope, r.Lane)
	if closed || l == nil {
		// This process is going, or never used the lane (so it cannot
		// hold it): the waiter looks elsewhere.
		e.bell.ringLook(r.ID, r.Scope, r.Lane)
		return
	}
	l.mu.Lock()
	if l.row == nil && !l.incoming && !withGrant {
		// This process does not hold the lane: if it just handed it on,
		// the registration follows the lane once; otherwise the waiter
		// is told to look, and registers with the holder it finds.
		to := l.passedTo
		l.mu.Unlock()
		if to != "" && !r.Forwarded {
			r.Forwarded = true
			if e.bell.ringWaiting(to, r) {
				return
			}
		}
		e.bell.ringLook(r.ID, r.Scope, r.Lane)
		return
	}
	if l.pending == nil {
		l.pending = map[string]registration{}
	}
	// A forwarded registration may arrive after a newer one of the same
	// waiter (arrival tickets only grow): keep the newer.
	if old, ok := l.pending[r.ID]; !ok || old.Arrival <= r.Arrival {
		l.pending[r.ID] = r
	}
	l.mu.Unlock()
}

// grantArrived records that a grant of (scope, lane) to this process is
// on its way to the claim waiting for it (see registered).
func (e *Engine) grantArrived(scope, lane string) {
	l := e.knownLane(scope, lane)
	if l == nil {
		return // never claimed here
	}
	l.mu.Lock()
	if l.claiming {
		l.incoming = true
		l.mu.Unlock()
		return
	}
	orphan := l.row == nil && !l.closing
	l.mu.Unlock()
	if !orphan {
		return
	}
	// A grant to a claim that has ended (its caller gave up): make sure
	// the lane does not stay with this process unknown to it.
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.wg.Add(1)
		go l.adoptOrphan()
	}
}

// adoptOrphan takes over a lane that the database says this process holds
// while no claim waits for it (granted just after its waiter gave up), and
// lets the linger watcher pass it on or release it.
func (l *laneState) adoptOrphan() {
	defer l.e.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r *row
	err := l.e.retryBusy(ctx, func() (err error) {
		r, err = readActive(ctx, l.e.db, l.scope, l.lane)
		return err
	})
	if err != nil || r == nil || r.h.ID != l.e.holderID {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.row != nil || l.claiming || l.closing {
		return // a claim in progress finds the row itself
	}
	l.row = &grant{id: r.id, epoch: r.epoch, at: time.Now()}
	l.idleSince = time.Now()
	if !l.busy {
		l.startWatcherLocked()
	}
	l.e.logf(slog.LevelInfo, "cleolease: adopted a lane granted after its waiter gave up; passing it on",
		"scope", l.scope, "lane", l.lane, "epoch", r.epoch)
}

// lookArrived records a request to look at (scope, lane) again, sent by a
// process that had this process's registration but does not hold the
// lane, and wakes the waiters.
func (e *Engine) lookArrived(scope, lane string) {
	if l := e.knownLane(scope, lane); l != nil {
		l.looks.Add(1)
	}
}

// takePending removes and returns the registrations this process holds.
func (l *laneState) takePending() []registration {
	l.mu.Lock()
	defer l.mu.Unlock()
	regs := make([]registration, 0, len(l.pending))
	for _, r := range l.pending {
		regs = append(regs, r)
	}
	l.pending = nil
	return regs
}

// restorePending puts regs back among the registrations this process
// holds, unless a newer registration of the same waiter arrived.
func (l *laneState) restorePending(regs []registration) {
	if len(regs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[string]registration{}
	}
	for _, r := range regs {
		if _, ok := l.pending[r.ID]; !ok {
			l.pending[r.ID] = r
		}
	}
}

// flushPending writes the queue rows of live waiters that registered with
// this process and have none yet; the caller is inside BEGIN IMMEDIATE.
func (l *laneState) flushPending(ctx context.Context, c *sql.Conn) error {
	regs := l.takePending()
	now := l.e.nowMS()
	for _, r := range regs {
		h := holder{ID: r.ID, PID: r.PID, Start: r.Start, Slot: r.Slot}
		if !l.stillWaiting(h, false) || !l.e.probe(h).alive {
			continue
		}
		if err := enqueue(ctx, c, l.scope, l.lane, r, now); err != nil {
			return err
		}
	}
	return nil
}

// forwardPending passes the registrations this process holds (those its
// hand-off did not serve, and those that arrived meanwhile) on to the new
// holder to, which orders them at its own hand-off; otherwise they would
// wait for this process's next one. When the lane was released instead
// (to is ""), their waiters are told to look: the lane is free to claim.
func (l *laneState) forwardPending(to string) {
	l.mu.Lock()
	regs := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, r := range regs {
		h := holder{ID: r.ID, PID: r.PID, Start: r.Start, Slot: r.Slot}
		switch {
		case r.ID == to || !l.stillWaiting(h, false) || !l.e.probe(h).alive:
			// Served, gave up, or gone.
		case to == "":
			l.e.bell.ringLook(r.ID, r.Scope, r.Lane)
		default:
			r.Forwarded = true
			l.e.bell.ringWaiting(to, r)
		}
	}
}

// enqueue writes r's queue row unless it has one; enqueued_at is the
// waiter's arrival (r.Enqueued) when it has one that is not in the future.
func enqueue(ctx context.Context, c *sql.Conn, scope, lane string, r registration, now int64) error {
	var arr, slot any
	if r.Arrival > 0 {
		arr = r.Arrival
	}
	if r.Slot > 0 {
		slot = r.Slot
	}
	if r.Enqueued > 0 && r.Enqueued <= now {
		now = r.Enqueued // aging counts from the arrival, not from the write
	}
	_, err := c.ExecContext(ctx, `INSERT INTO _writer_queue
		(scope, lane, holder_id, priority, enqueued_at, deadline_at, holder_pid, holder_start, holder_slot, ttl_ms, arrival)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
		WHERE NOT EXISTS (SELECT 1 FROM _writer_queue WHERE scope = ?1 AND lane = ?2 AND holder_id = ?3)`,
		scope, lane, r.ID, r.Priority, now, now+r.TTL, r.PID, r.Start, slot, r.TTL, arr)
	return err
}

// Each lane has a region of 1<<wantBits bytes in the sidecar; a waiting
// process holds a shared lock on its own byte of it (chosen by its
// liveness slot) for as long as it claims the lane. A holder tests the
// whole region to learn that someone waits, and one waiter's byte to learn
// that this waiter still waits.
const wantBits = 46

func (l *laneState) wantByte(slot int64) int64 { return l.want + slot } // slots are below 1<<46

// stillWaiting reports whether the waiter h is still claiming the lane:
// whether it holds its want byte. When that cannot be told (no sidecar,
// no slot, a failed test), a waiter known from its queue row (fromRow) is
// given the benefit of the doubt; one known only from its registration (a
// datagram) is not.
func (l *laneState) stillWaiting(h holder, fromRow bool) bool {
	if l.e.side == nil || h.Slot <= 0 {
		return fromRow
	}
	w, err := l.e.side.rangeLocked(l.wantByte(h.Slot), 1)
	if err != nil {
		return fromRow
	}
	return w
}

// lockWant / unlockWant announce to holders in other processes, through a
// shared lock on the lane's byte of the sidecar, that this process waits.
func (l *laneState) lockWant() {
	if l.e.side == nil || l.wantLocked {
		return
	}
	if l.e.side.setLock(l.wantByte(l.me().Slot), true) == nil {
		l.wantLocked = true
	}
}

func (l *laneState) unlockWant() {
	l.rung, l.rungEpoch, l.registered = "", 0, false
	if l.wantLocked {
		l.e.side.setLock(l.wantByte(l.me().Slot), false)
		l.wantLocked = false
	}
}

// othersWaiting reports whether another process waits for this lane.
// The sidecar answers without touching SQLite; without one, the queue does.
func (l *laneState) othersWaiting(ctx context.Context) bool {
	if l.e.side != nil {
		if w, err := l.e.side.rangeLocked(l.want, 1<<wantBits); err == nil {
			return w
		}
	}
	return l.queueHasOthers(ctx)
}

func (l *laneState) queueHasOthers(ctx context.Context) bool {
	var n int
	err := l.e.db.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM _writer_queue WHERE scope = ? AND lane = ? AND holder_id <> ?)`,
		l.scope, l.lane, l.e.holderID).Scan(&n)
	return err == nil && n == 1
}

// abandon leaves the queue after the context ended or the wait bound was
// reached. Cleanup runs on the engine's connection, detached from the
// caller's context. If the lane was handed to us meanwhile, a wait-bound
// abandon keeps it (the grant wins); a cancelled caller leaves it to the
// linger watcher, which passes it on.
func (l *laneState) abandon(ctx context.Context, cause error) (*grant, error) {
	l.unlockWant() // first: see leaveQueue
	g, err := l.quit(ctx)
	if err != nil {
		return nil, err
	}
	if g != nil {
		if cause == errWaitBound {
			return g, nil
		}
		l.setRow(g)
	}
	return nil, cause
}

func (l *laneState) abandonWith(ctx context.Context, cause error) (*grant, error) {
	l.unlockWant() // first: see leaveQueue
	g, err := l.quit(ctx)
	if err != nil {
		l.e.logf(slog.LevelWarn, "cleolease: queue cleanup failed", "scope", l.scope, "lane", l.lane, "err", err)
	}
	if g != nil {
		// Handed to us meanwhile: the grant wins (dropping it would leave
		// the lane with a live process that no longer waits for it).
		return g, nil
	}
	var le *Error
	if errors.As(cause, &le) {
		return nil, cause
	}
	return nil, l.e.errf("acquire", l.scope, l.lane, cause, "")
}

// quit ends the claim's wait after its want byte was released, and
// reports a grant if the lane was handed to this process meanwhile. A
// claim that wrote a queue row leaves the queue (leaveQueue). One that
// only registered has no row to remove, and must not wait for SQLite's
// write lock, which the holder's own transaction may keep for long (the
// caller's deadline has passed): a read finds a grant committed before
// the want byte was released, and a grant whose hand-off checked the byte
// just before, and commits later, is adopted when its grant datagram
// arrives (grantArrived).
func (l *laneState) quit(ctx context.Context) (*grant, error) {
	if l.wroteRow {
		return l.leaveQueue(ctx)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	var r *row
	err := l.e.retryBusy(rctx, func() (err error) {
		r, err = readActive(rctx, l.e.db, l.scope, l.lane)
		return err
	})
	if err != nil || r == nil || r.h.ID != l.e.holderID {
		return nil, nil // no grant seen; a late one is adopted on arrival
	}
	return &grant{id: r.id, epoch: r.epoch, at: time.Now()}, nil
}

// leaveQueue removes this process's queue row of the lane and reports a
// grant if the lane was handed to it meanwhile. The caller has released
// its want byte first: a holder tests it inside its hand-off transaction,
// so either the hand-off sees this process no longer waiting, or it
// committed the grant before this transaction, which then finds it. Transient failures (I/O
// error, disk full, busy) are retried for up to 5s: a queue row left
// behind by a live process that no longer waits could later be handed the
// lane, and keep it.
func (l *laneState) leaveQueue(ctx context.Context) (g *grant, err error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	bo := backoff{min: 100 * time.Microsecond, max: 50 * time.Millisecond}
	for {
		g, err = l.tryLeaveQueue(cctx)
		var se sqlite3.Error
		if err == nil || !errors.As(err, &se) || !transientCodes[se.Code] || bo.sleep(cctx, nil) != nil {
			return g, err
		}
	}
}

// transientCodes are the SQLite result codes leaveQueue retries.
var transientCodes = map[sqlite3.ErrNo]bool{sqlite3.ErrIoErr: true, sqlite3.ErrFull: true, sqlite3.ErrBusy: true,
	sqlite3.ErrLocked: true, sqlite3.ErrProtocol: true}

func (l *laneState) tryLeaveQueue(cctx context.Context) (*grant, error) {
	var g *grant
	err := l.e.immediateOp(cctx, "dequeue", func(cctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(cctx, `DELETE FROM _writer_queue WHERE scope = ? AND lane = ? AND holder_id = ?`, l.scope, l.lane, l.e.holderID); err != nil {
			return err
		}
		r, err := readActive(cctx, c, l.scope, l.lane)
		if errors.Is(err, ErrUntrusted) {
			return nil // nothing to adopt; leaving the queue still holds
		}
		if err != nil {
			return err
		}
		if r != nil && r.h.ID == l.e.holderID {
			g = &grant{id: r.id, epoch: r.epoch, at: time.Now()}
		}
		return nil
	})
	return g, err
}

// release ends a first-acquisition Hold.
func (l *laneState) release(h *Hold) {
	l.mu.Lock()
	l.depth = 0
	l.mu.Unlock()
	if !h.gateHeld {
		return
	}
	g := h.g
	if g != nil && !g.lost.Load() && l.currentRow() == g && !l.e.opts.MemoryOnly {
		local := l.hasWaiters()
		switch {
		case l.othersWaiting(context.Background()) && (!local || !l.inSlice(g)):
			l.handOff(g, "handed off")
		case !local && l.e.opts.Linger <= 0:
			l.handOff(g, "released")
		}
		// Otherwise the row stays: for this process's next queued writer
		// (within its slice), or lingering while nobody waits.
	}
	l.leave()
}

// inSlice reports whether this process may keep the lane for more of its
// own queued work although another process waits: for at most Slice after
// it got the row (0: never, strict FIFO).
func (l *laneState) inSlice(g *grant) bool {
	return l.e.opts.Slice > 0 && time.Since(g.at) < l.e.opts.Slice
}

// handOff releases this process's row and, in the same transaction, grants
// the lane to the first live waiter (checked inside that transaction, so a
// waiter that gave up is never granted). The caller owns the gate (or the
// engine is closing).
func (l *laneState) handOff(g *grant, why string) {
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
		// Checked again inside the transaction: a waiter that gave up
		// meanwhile is never granted the lane (see leaveQueue).
		if cand != nil && (!l.stillWaiting(cand.h, false) || !l.e.probe(cand.h).alive) {
			gone0 = append(gone0, cand.h.ID)
			cand = nil
		}
		if cand != nil {
			_, err := l.grantTo(ctx, c, cand.h, cand.ttl, grantArgs{prev: me, ifQueueEmpty: true})
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
			if _, err := l.grantTo(ctx, c, hd.h, hd.ttl, grantArgs{prev: me, dequeue: hd.row}); err != nil {
				return err
			}
			rang = hd.h.ID
			g.given.Store(true)
			return nil
		}
		res, err := c.ExecContext(ctx, `UPDATE _writer_leases SET active = 0, reentrancy_depth = 0, heartbeat_at = ?
			WHERE id = ? AND holder_id = ? AND epoch = ? AND active = 1`, l.e.nowMS(), g.id, l.e.holderID, g.epoch)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errLostRow
		}
		g.given.Store(true)
		return nil
	})
	if err == nil {
		if rang != "" {
			l.e.stats.Handoffs.Add(1)
		}
		l.e.stats.DeadWaiters.Add(int64(len(gone)))
		// From now on a registration reaching this process follows the
		// lane to the new holder, or sends its waiter to look (see
		// registered).
		l.mu.Lock()
		if l.row == g {
			l.row = nil
		}
		l.passedTo = rang
		l.mu.Unlock()
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
		l.markLost(g, "row gone at release")
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
	l.mu.Lock()
	if l.row == g {
		l.row = nil
	}
	l.mu.Unlock()
}

var errLostRow = errors.New("row no longer ours")

// watch runs while this process holds the row: whenever no hold is active
// it hands the row over as soon as another process waits (woken by the
// doorbell, or by the gate freeing) and releases it after Linger idle. It
// ends when the row is gone.
func (l *laneState) watch() {
	defer l.e.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		bell := l.e.bell.wait()
		if l.tryEnter() {
			l.mu.Lock()
			g, idle, closing := l.row, time.Since(l.idleSince), l.closing
			l.mu.Unlock()
			if g != nil && !closing {
				if g.lost.Load() || idle >= l.e.opts.Linger || l.othersWaiting(context.Background()) {
					if !g.lost.Load() {
						l.handOff(g, "released after linger")
					}
				}
			}
			l.mu.Lock()
			done := l.row == nil || l.closing
			if done {
				l.watching = false
			}
			l.busy = false
			if l.waiters.Len() > 0 {
				l.busy = true
				l.leaveLocked()
			}
			l.mu.Unlock()
			if done {
				return
			}
			wait := l.e.opts.Linger - idle
			if wait > FallbackPoll || wait < 0 {
				wait = FallbackPoll
			}
			t.Reset(wait)
		} else {
			l.mu.Lock()
			done := l.row == nil || l.closing
			if done {
				l.watching = false
			}
			l.mu.Unlock()
			if done {
				return
			}
			t.Reset(FallbackPoll)
		}
		select {
		case <-bell:
		case <-l.kick:
		case <-t.C:
		}
	}
}

// shutdown is the lane's part of Engine.Close.
func (l *laneState) shutdown() {
	l.mu.Lock()
	l.closing = true
	g := l.row
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	if l.e.opts.MemoryOnly {
		return
	}
	if g != nil && !g.lost.Load() {
		l.handOff(g, "released at close")
	}
	l.mu.Lock()
	claiming := l.claiming
	l.mu.Unlock()
	if claiming {
		// A claim still waits (its caller's Acquire): its own exit leaves
		// the queue and releases its want byte; touching them here would
		// race with it.
		return
	}
	l.leaveQueue(context.Background())
	l.unlockWant()
}
