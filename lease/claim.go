package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// reclaimable reports whether an active row of another holder may be
// taken over, and why.
func (l *laneState) reclaimable(r *row) (bool, string) {
	v := l.e.probe(r.h)
	info := fmt.Sprintf("%s (pid %d, epoch %d): %s", r.h.ID, r.h.PID, r.epoch, v.reason)
	l.mu.Lock()
	l.claimSlot.waitedOn = info // read by waiters that give up at the gate
	l.mu.Unlock()
	return reclaimDecision(v, l.e.nowMS(), r.heartbeat, r.ttl, l.e.opts.TTL.Milliseconds(), l.e.opts.StealAfterTTL)
}

// reclaimDecision decides whether a lane whose holder got verdict v may be
// reclaimed at now (milliseconds, as heartbeat_at), given the row's
// heartbeat_at and ttl_ms (defTTL, the engine's TTL in milliseconds,
// stands in for a row without one), and why: "dead" for a provably gone
// holder; "unknown" for a holder the OS would not tell about, once its
// heartbeat is older than its TTL (a live holder beats every TTL/3, so it
// is not robbed; a dead one does not block the lane for ever); "ttl" for
// any holder under the StealAfterTTL policy, likewise. Otherwise it waits.
func reclaimDecision(v verdict, now, heartbeat, ttl, defTTL int64, stealAfterTTL bool) (bool, string) {
	if v.dead() {
		return true, "dead"
	}
	if ttl <= 0 {
		ttl = defTTL
	}
	expired := ttl > 0 && now-heartbeat > ttl
	switch {
	case !v.alive() && expired:
		return true, "unknown"
	case stealAfterTTL && expired:
		return true, "ttl"
	}
	return false, ""
}

// attempt is one claim transaction (a single try: SQLITE_BUSY comes back).
// It returns a grant when this process is now the holder; otherwise it
// makes sure this process is queued with its registration c.reg (and, when
// the row is free or its holder dead, hands it to the queue's head), and
// returns the active holder's id.
func (c *claimRun) attempt(ctx context.Context) (g *grant, holderID string, err error) {
	l, reg := c.l, c.reg
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
			if err := dequeue(bg, c, l.scope, l.lane, me.ID); err != nil {
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
		return enqueue(bg, c, l.scope, l.lane, reg, l.e.nowMS())
	})
	return g, holderID, err
}

// fallbackPoll bounds how long a waiter sleeps between looks at the lane
// when the doorbell stays silent, unless registeredPoll applies.
const fallbackPoll = 5 * time.Millisecond

// registeredPoll replaces fallbackPoll while the lane's live holder has
// this waiter's registration and the kernel reports exits (inotify on
// Linux, or a watch of the holder's process elsewhere): the
// holder (or the holder it passes the registration on to) rings when it
// grants or frees the lane, and a crashed holder's exit rings too, so the
// fallback only covers what neither reports (a Break from another
// process, say). Polling less leaves the CPU to the holder.
const registeredPoll = 50 * time.Millisecond

// claimRun is the state of one claim in progress: its registration, the
// holder it told it waits, and what it has seen of the doorbell. Only the
// goroutine that runs the claim touches it (the lane's gate admits one
// claim at a time), so it needs no lock.
type claimRun struct {
	l          *laneState
	reg        registration // what this claim sends the holder (see registration)
	rung       string       // the holder this claim told it waits
	rungEpoch  int64        // the epoch at which the row named it (0: unknown)
	wroteRow   bool         // this claim ran a claim transaction (which queues)
	registered bool         // and that holder's engine received the registration
	wantLocked bool         // this claim holds its want announcement (see lockWant)
	seenGrants int64        // the doorbell's grant count at the claim's last look
	seenLooks  int64        // the lane's looks at the claim's last look
	exitPID    int64        // the pid whose exit rings the doorbell (0: none)
	exitStop   func()       // stops that watch (see watchExit)
	poll       backoff      // the fallback period without a doorbell (pollWakeMin to fallbackPoll)
	confirm    Confirmer    // the caller's connection, to confirm a grant datagram in (nil: none)
	begun      bool         // the grant was confirmed inside a transaction opened on confirm
	seenEpoch  int64        // the lane's epoch at the claim's last look (0: none yet)
	enqueueDue bool         // await's retry timer is the self-enqueue deadline (see progressed)
}

// claim acquires the row across processes; the caller owns the gate.
// begun reports a grant confirmed inside the transaction it opened on
// opts.Confirm, left open.
func (l *laneState) claim(ctx context.Context, bound <-chan time.Time, opts AcquireOptions) (g *grant, begun bool, err error) {
	c := &claimRun{l: l, poll: backoff{min: pollWakeMin, max: fallbackPoll}, confirm: opts.Confirm}
	g, err = c.run(ctx, bound, opts)
	return g, g != nil && c.begun, err
}

// run acquires the row across processes. A waiter that reaches the live
// holder with its registration waits without writing; otherwise (or after
// selfEnqueueAfter, or when sent back) it runs a claim transaction, which
// queues it. Then it reads the active row each time the doorbell rings or
// its fallback period ends (pollPeriod), until the row is handed to it,
// falls free, or its holder is found dead.
func (c *claimRun) run(ctx context.Context, bound <-chan time.Time, opts AcquireOptions) (g *grant, err error) {
	l := c.l
	defer c.unlockWant()
	l.mu.Lock()
	l.claimSlot.beginLocked()
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.claimSlot.endLocked(g != nil)
		l.mu.Unlock()
	}()
	fallback := time.NewTimer(fallbackPoll)
	defer fallback.Stop()
	// Take a place in line and announce the wait before touching SQLite:
	// the queue row can only be written once the holder's transaction ends,
	// and by then the holder must already know to hand over.
	var arrival int64
	if l.e.locks != nil {
		arrival = l.e.locks.NextTicket()
	}
	c.lockWant()
	me := l.me()
	c.reg = registration{Scope: l.scope, Lane: l.lane, ID: me.ID, Start: me.Start, PID: me.PID, Slot: me.Slot,
		Priority: int64(opts.Priority), Arrival: arrival, TTL: l.e.opts.TTL.Milliseconds(), Enqueued: l.e.nowMS()}
	// When a live holder got the registration, the first claim
	// transaction is skipped: the holder orders the registration in the
	// transaction that hands the lane over (and passes it on to the next
	// holder if it is not served yet), so the waiter does not compete with
	// the holder (or the next holder) for SQLite's write lock. It writes
	// its own queue row only when the lane falls free, its holder dies, or
	// after selfEnqueueAfter (so that Status shows it).
	c.seenGrants, c.seenLooks = l.e.bell.granted.Load(), l.inbox.looks.Load() // a ring from now on makes await look
	c.wroteRow = false
	skip := c.ringHolder(ctx)
	selfEnqueue := time.Now().Add(selfEnqueueAfter)
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
		c.lockWant() // (again, if it failed: see lockWant)
		if skip {
			holderID = c.rung
		} else {
			g, holderID, err = c.attempt(ctx)
			if err == nil || !isBusy(err) {
				c.wroteRow = true // (or may have: see quit)
			}
		}
		retryIn := time.Duration(0)
		c.enqueueDue = skip
		if skip {
			skip, retryIn = false, max(time.Until(selfEnqueue), time.Microsecond)
		}
		switch {
		case err != nil && isBusy(err) && ctx.Err() == nil:
			retryIn = bo.next()
		case err != nil:
			if ctx.Err() != nil {
				return c.abandon(ctx, ctx.Err())
			}
			return c.abandonWith(ctx, err)
		case g != nil:
			return g, nil
		default:
			bo.reset()
		}
		if holderID != "" && holderID != c.rung {
			c.rung, c.rungEpoch = holderID, 0
			c.registered = l.e.bell.ringWaiting(holderID, c.reg) // a lingering holder hands over at once
		}
		g, retry, err := c.await(ctx, bound, fallback, retryIn)
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
func (c *claimRun) await(ctx context.Context, bound <-chan time.Time, fallback *time.Timer, retryIn time.Duration) (g *grant, retry bool, err error) {
	l := c.l
	look, nudged := true, false
	var again <-chan time.Time
	var retryTimer *time.Timer
	if retryIn > 0 {
		retryTimer = time.NewTimer(retryIn)
		defer retryTimer.Stop()
		again = retryTimer.C
	}
	for {
		bell := l.e.bell.wait()
		closes, granted, looks := l.e.bell.closes(), l.e.bell.granted.Load(), l.inbox.looks.Load()
		if granted != c.seenGrants {
			look = true // rung since the last look (perhaps before this wait began)
		}
		if looks != c.seenLooks {
			// A process that had our registration and did not hold the
			// lane sent us to look.
			look, nudged = true, true
		}
		c.seenGrants, c.seenLooks = granted, looks
		if look && c.confirm != nil && l.grantIncoming() {
			// A grant datagram: open the caller's transaction at once
			// and confirm the grant there (see AcquireOptions.Confirm).
			g, err := c.confirmInTx(ctx, c.confirm)
			switch {
			case g != nil:
				c.begun = true
				return g, false, nil
			case err != nil && ctx.Err() != nil:
				g, err := c.abandon(ctx, ctx.Err())
				return g, false, err
			}
			// Not confirmed (or BEGIN failed): look the usual way.
		}
		if look {
			c.lockWant() // (again, if it failed: see lockWant)
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
				g, err := c.abandon(ctx, ctx.Err())
				return g, false, err
			case err != nil && !isBusy(err):
				g, err := c.abandonWith(ctx, err)
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
				if c.progressed(r) && c.enqueueDue && retryTimer != nil {
					// The lane was handed on since the last look: the
					// registration travels with the grants, so the queue
					// row waits for selfEnqueueAfter more.
					retryTimer.Reset(selfEnqueueAfter)
				}
				switch {
				case nudged && r.h.ID == c.rung && r.epoch == c.rungEpoch:
					// Sent back by the holder the row names, at the same
					// epoch (it does not know it holds the lane yet, or
					// any more): write our own queue row instead of
					// ringing it again.
					c.registered = false
					return nil, true, nil
				case r.h.ID != c.rung || nudged:
					// A new holder, or one that was not holding yet when
					// our registration reached it: tell it someone waits.
					c.rung, c.rungEpoch = r.h.ID, r.epoch
					c.registered = l.e.bell.ringWaiting(r.h.ID, c.reg)
				}
			}
			if r != nil && r.h.ID != l.e.holderID {
				c.watchExit(r.h.PID)
			}
			fallback.Reset(c.pollPeriod())
		}
		select {
		case <-bell:
			nudged = l.inbox.looks.Load() != looks
			look = !l.e.bell.watched() || nudged || l.e.bell.granted.Load() != granted || l.e.bell.closes() != closes
		case <-fallback.C:
			look, nudged = true, false
		case <-again:
			return nil, true, nil
		case <-ctx.Done():
			g, err := c.abandon(ctx, ctx.Err())
			return g, false, err
		case <-bound:
			g, err := c.abandon(ctx, errWaitBound)
			return g, false, err
		}
	}
}

// selfEnqueueAfter is how long a waiter whose registration reached the
// holder relies on the registration alone before it also writes its own
// queue row (which Status and other implementations see).
const selfEnqueueAfter = 100 * time.Millisecond

// ringHolder tells the lane's holder, if another process holds it, that
// this process waits, and reports whether that holder is alive and
// received the registration.
func (c *claimRun) ringHolder(ctx context.Context) bool {
	l := c.l
	ctx = context.WithoutCancel(ctx)
	r, err := readActive(ctx, l.e.db, l.scope, l.lane)
	if err != nil || r == nil {
		return false // free (or unreadable): the claim transaction decides
	}
	if r.h.ID == l.e.holderID {
		return false
	}
	c.rung, c.rungEpoch, c.seenEpoch = r.h.ID, r.epoch, r.epoch
	c.registered = l.e.bell.ringWaiting(r.h.ID, c.reg)
	c.watchExit(r.h.PID)
	dead, _ := l.reclaimable(r)
	return c.registered && !dead
}

// pollWakeMin is the first fallback period of a waiter without a
// doorbell (the build tag cleolease_pollwake): it doubles at each
// look, up to fallbackPoll.
const pollWakeMin = 200 * time.Microsecond

// noFallback, set only by tests (a child's CLEOLEASE_NO_FALLBACK), makes
// every fallback period an hour: a waiter then looks at its lane only when
// its doorbell, file watch or exit watch rings.
var noFallback atomic.Bool

// pollPeriod is how long the waiter's fallback period is now.
func (c *claimRun) pollPeriod() time.Duration {
	l := c.l
	switch {
	case noFallback.Load():
		return time.Hour
	case c.registered && (l.e.bell.exitsWatched() || c.exitStop != nil):
		return registeredPoll
	case !l.e.bell.watched():
		return c.poll.next()
	}
	return fallbackPoll
}

// watchExit makes the exit of process pid — the holder the claim last saw
// — ring the doorbell, where the file watch does not already report
// exits (the portable tier: platform.WatchExit).
func (c *claimRun) watchExit(pid int64) {
	if pid == c.exitPID {
		return
	}
	c.stopExitWatch()
	c.exitPID, c.exitStop = pid, c.l.e.bell.exitWatch(pid)
}

// stopExitWatch ends the claim's exit watch, if any.
func (c *claimRun) stopExitWatch() {
	if c.exitStop != nil {
		c.exitStop()
	}
	c.exitPID, c.exitStop = 0, nil
}

// abandon leaves the queue after the context ended or the wait bound was
// reached. Cleanup runs on the engine's connection, detached from the
// caller's context. If the lane was handed to us meanwhile, a wait-bound
// abandon keeps it (the grant wins); a cancelled caller leaves it to the
// linger watcher, which passes it on.
func (c *claimRun) abandon(ctx context.Context, cause error) (*grant, error) {
	l := c.l
	c.unlockWant() // first: see leaveQueue
	g, err := c.quit(ctx)
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

func (c *claimRun) abandonWith(ctx context.Context, cause error) (*grant, error) {
	l := c.l
	c.unlockWant() // first: see leaveQueue
	g, err := c.quit(ctx)
	if err != nil && !(WriteRefused(err) && WriteRefused(cause)) {
		// (A file that refused the claim refuses its cleanup too: the
		// claim wrote no queue row there.)
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
func (c *claimRun) quit(ctx context.Context) (*grant, error) {
	l := c.l
	if c.wroteRow {
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
// lane, and keep it. A file that refuses writes (WriteRefused: a LiteFS
// replica) is not retried: it refused the claim that would have written
// the row.
func (l *laneState) leaveQueue(ctx context.Context) (g *grant, err error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	bo := backoff{min: 100 * time.Microsecond, max: 50 * time.Millisecond}
	for {
		g, err = l.tryLeaveQueue(cctx)
		var se sqlite3.Error
		if err == nil || !errors.As(err, &se) || !transientCodes[se.Code] || WriteRefused(err) || bo.sleep(cctx, nil) != nil {
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
		if err := dequeue(cctx, c, l.scope, l.lane, l.e.holderID); err != nil {
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
