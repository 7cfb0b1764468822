package lease

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

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
	seenHolder string       // and its holder then
	enqueueDue bool         // await's retry timer is the self-enqueue deadline (see progressed)
	unsettled  bool         // quit left without the write lock: the lane settles (settle.go)
	quitSeen   rowRef       // the row quit read, when unsettled
	seenOther  bool         // a look of this claim found the lane free or another process's (see handedToUs)
	above      int64        // the highest epoch such a look found
	// afterBusy: the claim transaction just met SQLITE_BUSY, so await
	// waits its back-off before it looks (a lane that looks free while
	// another connection keeps the write lock — an inline claim's
	// transaction, inline.go — would otherwise be read and tried again
	// without a pause).
	afterBusy bool
	// handed: the grant was written for this claim by another holder (a
	// hand-off), whose grant datagram brings the registrations it passes
	// on (see run's end).
	handed bool
}

// saw records a look of this claim at the lane's row r (nil: no active
// row). A row that does not name this process is one that a grant to this
// claim must follow (handedToUs).
func (c *claimRun) saw(r *row) {
	if r != nil && r.h.ID == c.l.e.holderID {
		return
	}
	c.seenOther = true
	if r != nil && r.epoch > c.above {
		c.above = r.epoch
	}
	if r != nil && !c.l.e.os.holes.unboundedLateGrant {
		// The lane has carried this epoch: no row of this process at or
		// below it is ever a grant (lateGrant), also in an engine that
		// opened since the process last used the lane.
		c.l.epochs.note(r.epoch)
	}
}

// handedToUs reports whether a row that names this process at epoch is a
// grant made to this claim, which it may take as its own at that epoch:
// the claim has seen the lane free or another process's before, and the
// epoch is above every epoch it saw there and every epoch this process
// has seen the lane carry (epochMemory). Any other row that names this
// process — one a restored or copied file brought back, written by this
// process (holder ids are per process) or by an earlier engine of it, at
// an epoch it already used — is taken over (attempt): rewritten at the
// clock floor like a dead holder's, never used at its old epoch. Taking a
// real grant over is safe too (the same guarded rewrite); it only costs
// the grant its epoch + 1.
func (c *claimRun) handedToUs(epoch int64) bool {
	return c.seenOther && epoch > max(c.above, c.l.epochs.high.Load())
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
		// A claim that quit without taking SQLite's write lock may still
		// be granted the lane by a hand-off that tested its want byte
		// just before quit released it: the lane settles (settle.go).
		settle := g == nil && c.unsettled && !l.e.os.holes.forgetLateGrant
		l.mu.Lock()
		if g != nil && c.handed && !l.claimSlot.incoming {
			// Found by reading the row before the hand-off's grant
			// datagram arrived: the registrations the previous holder
			// passes on come with it. This hold's hand-off first gathers
			// the registrations of the processes that want the lane
			// (gather), so that they are served in their order, not
			// raced for a lane released as if nobody waited.
			g.gatherBy.Store(-1)
		}
		l.claimSlot.endLocked(g != nil, settle)
		start := settle && l.settler.quitLocked(c.quitSeen)
		l.mu.Unlock()
		if start && !l.startSettle() {
			l.settleHere() // closing: this claim settles the lane itself
		}
	}()
	fallback := time.NewTimer(fallbackPoll)
	defer fallback.Stop()
	// Take a place in line and announce the wait before touching SQLite:
	// the queue row can only be written once the holder's transaction ends,
	// and by then the holder must already know to hand over.
	// A writer that queued at a FIFO lane's gate arrived then (fifo.go).
	l.mu.Lock()
	arrival := l.gateArrival
	l.gateArrival = 0
	l.mu.Unlock()
	if arrival == 0 && l.e.locks != nil {
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
	skip := c.ringPassed() || c.ringHolder(ctx)
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
		c.afterBusy = false
		switch {
		case err != nil && isBusy(err) && ctx.Err() == nil:
			retryIn = bo.next()
			c.afterBusy = true
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

// ringHolder tells the lane's holder, if another process holds it, that
// this process waits, and reports whether that holder is alive and
// received the registration.
func (c *claimRun) ringHolder(ctx context.Context) bool {
	l := c.l
	_ = l.e.fault("ring-holder") // lets a test count the reads; nothing to inject
	ctx = context.WithoutCancel(ctx)
	r, err := readActive(ctx, l.e.db(), l.scope, l.lane)
	if err != nil {
		return false // unreadable: the claim transaction decides
	}
	c.saw(r)
	if r == nil || r.h.ID == l.e.holderID {
		return false // free, or named this process: the claim transaction decides
	}
	c.rung, c.rungEpoch, c.seenEpoch, c.seenHolder = r.h.ID, r.epoch, r.epoch, r.h.ID
	c.registered = l.ring(r, c.reg)
	c.watchExit(r.h.PID)
	dead, _ := l.reclaimable(r)
	return c.registered && !dead
}

// ringPassed is ringHolder without reading the row, for a claim that
// follows this process's own hand-off inside a data commit (inbox.passed):
// the holder is the one that commit granted, found alive and waiting in
// that transaction, so the claim registers with it at once — on LiteFS a
// read transaction saved is a round of FUSE reads of the page the commit
// just changed. A holder that has moved the lane on since forwards the
// registration or sends this waiter to look, as for any registration. It
// reports whether the registration was delivered. A hand-off older than
// passedFresh is not used.
func (c *claimRun) ringPassed() bool {
	l := c.l
	l.mu.Lock()
	p := l.inbox.passed
	held := l.held.row != nil
	l.mu.Unlock()
	if held || p.to.ID == "" || p.to.ID == l.e.holderID || time.Since(p.at) > passedFresh {
		return false // (an older one has likely moved on: read the row)
	}
	c.rung, c.rungEpoch, c.seenEpoch, c.seenHolder = p.to.ID, p.epoch, p.epoch, p.to.ID
	c.saw(&row{epoch: p.epoch, h: p.to})
	c.registered = l.e.bell.ringWaiting(p.to.ID, c.reg)
	if !c.registered {
		return false
	}
	c.watchExit(p.to.PID)
	return true
}

// passedFresh is how long after this process's hand-off inside a commit a
// claim registers with that grant's holder without reading the row
// (ringPassed). A registration that reaches a holder which has moved the
// lane on costs a forward or a look, never safety.
const passedFresh = time.Second

// attempt is one claim transaction (a single try: SQLITE_BUSY comes back).
// It returns a grant when this process is now the holder; otherwise it
// makes sure this process is queued with its registration c.reg (and, when
// the row is free or its holder dead, hands it to the queue's head), and
// returns the active holder's id.
func (c *claimRun) attempt(ctx context.Context) (g *grant, holderID string, err error) {
	cr := c
	l, reg := c.l, c.reg
	var rang string
	// What the transaction did, told once it committed (counted, logged,
	// observed): nothing slow runs while it holds SQLite's write lock,
	// and a transaction rolled back or run again is not told.
	var reclaimed, takenOver *row
	var reclaimWhy string
	var claimed, handedOff bool
	defer func() {
		if rang != "" {
			l.e.bell.ringGrant(rang, l.scope, l.lane, nil) // (a wake-up: harmless if the grant did not commit)
		}
		if err != nil {
			return
		}
		if takenOver != nil {
			l.e.logf(slog.LevelWarn, "cleolease: lease row naming this process taken over: it was not granted to this claim (a restored or copied file?)",
				"scope", l.scope, "lane", l.lane, "epoch", takenOver.epoch)
		}
		if reclaimed != nil {
			l.countReclaim(reclaimWhy)
			l.e.logf(slog.LevelWarn, "cleolease: lease reclaimed", "scope", l.scope, "lane", l.lane,
				"from", reclaimed.h.ID, "pid", reclaimed.h.PID, "epoch", reclaimed.epoch, "reason", reclaimWhy)
		}
		if claimed {
			l.e.stats.Claims.Add(1)
		}
		if handedOff {
			l.countHandoff()
		}
	}()
	// A grant to a writer that begins its own transaction at once (a
	// Confirm connection: the driver's) keeps the write turn for it.
	var keep bool
	err = l.e.tryImmediateKeep(ctx, "claim", &keep, func(bg context.Context, c *sql.Conn) error {
		g, rang, holderID = nil, "", ""
		reclaimed, takenOver, reclaimWhy, claimed, handedOff = nil, nil, "", false, false
		active, err := readActive(bg, c, l.scope, l.lane)
		if err != nil {
			return err
		}
		me := l.me()
		mine := active != nil && active.h.ID == me.ID
		if mine && cr.handedToUs(active.epoch) {
			// Handed to us by the previous holder.
			if err := dequeue(bg, c, l.scope, l.lane, me.ID); err != nil {
				return err
			}
			g = &grant{id: active.id, epoch: active.epoch, at: time.Now()}
			cr.handed = true
			return nil
		}
		cr.saw(active)
		// Waiters that told us they wait get their place before we decide.
		if err := l.flushPending(bg, c); err != nil {
			return err
		}
		free := active == nil
		var prev *row
		if mine {
			// A row that names this process but was not handed to this
			// claim (handedToUs): a restored or copied file's. Taken over
			// at the floor, in grant order, like a dead holder's.
			takenOver = active
			free, prev = true, active
		} else if !free {
			ok, why := l.reclaimable(active)
			if ok {
				reclaimed, reclaimWhy = active, why
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
				claimed = true
				g, err = l.grantTo(bg, c, me, l.e.opts.TTL.Milliseconds(), grantArgs{prev: prev, dequeue: true})
				keep = g != nil && cr.confirm != nil
				return err
			}
			// Someone else is first in line: give it the lane now.
			if _, err := l.grantTo(bg, c, hd.h, hd.ttl, grantArgs{prev: prev, dequeue: true}); err != nil {
				return err
			}
			handedOff = true
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

// selfEnqueueAfter is how long a waiter whose registration reached the
// holder relies on the registration alone before it also writes its own
// queue row (which Status and other implementations see).
const selfEnqueueAfter = 100 * time.Millisecond
