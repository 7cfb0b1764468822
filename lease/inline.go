package lease

import (
	"context"
	"database/sql/driver"
	"io"
	"log/slog"
	"time"
)

// InlineConfirmer is a Confirmer on which a claim may also take a free
// lane inside the caller's own write transaction (AcquireOptions.Confirm):
// when no process holds, wants or queues for the lane and SQLite's write
// lock is free, Acquire opens the caller's BEGIN IMMEDIATE itself and
// writes this process's grant there, instead of a claim transaction on the
// engine's connection. The Hold is then Begun and Inline, and the caller
// must call Fencing.EndInline just before its COMMIT.
//
// Offer it only on a connection whose statements no user callback sees
// (an update hook would see the lease row's claim and release), as with
// Fencing.Pass.
type InlineConfirmer interface {
	Confirmer
	// TryBeginImmediate opens the caller's write transaction (BEGIN
	// IMMEDIATE) only if SQLite's write lock is free now: begun false and
	// err nil when it is taken (nothing is open then). err is any other
	// error of BEGIN.
	TryBeginImmediate(ctx context.Context) (begun bool, err error)
}

// inlineClaimSQL takes a free lane inside the caller's transaction: it
// rewrites the lane's newest released row for holder ?3 at max(the lane's
// highest epoch + 1, the floor ?9), only while the lane has no active row
// and no queue row, and no active row of any lane names ?3 (one that Open's
// sweep would release, stale.go). A lane without a released row (its first
// grant, or its rows deleted) is left to the claim transaction. grantFields
// gives ?3 to ?8. It returns the row's id and epoch, or no row.
const inlineClaimSQL = `UPDATE main._writer_leases SET ` + grantFields + `,
	epoch = max((SELECT min(coalesce(max(epoch), 0), 4611686018427387903) FROM main._writer_leases
		WHERE scope = ?1 AND lane = ?2 AND typeof(epoch) = 'integer') + 1, ?9)
	WHERE id = (SELECT id FROM main._writer_leases WHERE scope = ?1 AND lane = ?2 AND active = 0 ORDER BY epoch DESC LIMIT 1)
	AND NOT EXISTS (SELECT 1 FROM main._writer_leases WHERE active = 1 AND (holder_id = ?3 OR (scope = ?1 AND lane = ?2)))
	AND NOT EXISTS (SELECT 1 FROM main._writer_queue WHERE scope = ?1 AND lane = ?2)
	RETURNING id, epoch`

// inlineReleaseSQL frees the row an inline claim wrote, inside the same
// transaction (releaseRow's statement). Arguments: row id, holder id,
// epoch, now (ms).
const inlineReleaseSQL = `UPDATE main._writer_leases SET active = 0, reentrancy_depth = 0, heartbeat_at = ?4
	WHERE id = ?1 AND holder_id = ?2 AND epoch = ?3 AND active = 1 RETURNING 1`

// claimInline tries to take the lane inside the caller's transaction,
// opened on cf (see InlineConfirmer); the caller owns the gate and this
// process holds no row of the lane. It returns the grant, with the
// transaction left open, or nil with nothing open: the lane is held,
// wanted or queued for, the write lock is taken, or it cannot be told —
// the claim transaction then decides, as before.
//
// Why it is safe. The grant is written under SQLite's write lock, in the
// transaction that carries the caller's data, and nobody sees it before
// that transaction commits: until then no other process can grant the
// lane (each grant is a write transaction), and at COMMIT the row either
// stays this process's (EndInline keeps it: from then on it is a row held
// like any claimed one) or is released in the same commit. Either way the
// data commits under the grant's (holder, epoch), which the fencing reads
// check as for any grant; a rollback takes the grant back with the data.
func (l *laneState) claimInline(ctx context.Context, cf InlineConfirmer) *grant {
	e := l.e
	if e.locks == nil || e.opts.MemoryOnly || e.opts.Replicated {
		// (On a LiteFS mount a replica's BEGIN IMMEDIATE and the claim
		// itself succeed, refused only at COMMIT: the claim transaction
		// refuses the write before the caller's transaction begins.)
		return nil
	}
	l.mu.Lock()
	quiet := l.held.row == nil && !l.claimSlot.busyLocked() && !l.settler.running
	l.mu.Unlock()
	if !quiet || l.wanted() {
		return nil
	}
	if err := e.fault("inline"); err != nil {
		return nil
	}
	begun, err := cf.TryBeginImmediate(ctx)
	if err != nil || !begun {
		return nil
	}
	// Under the write lock now: a waiter that announced itself since the
	// first look is seen, and one that announces itself later waits for
	// this transaction like any writer's.
	if l.wanted() {
		cf.Rollback()
		return nil
	}
	me := l.me()
	ttl, slot, start := l.holderValues(me, 0)
	id, epoch, err := queryRowEpoch(context.WithoutCancel(ctx), cf, inlineClaimSQL,
		l.scope, l.lane, me.ID, me.PID, e.nowMS(), ttl, start, slot, l.epochs.floor(e.clock.Now()))
	if err != nil || epoch <= 0 || epoch >= 1<<62 {
		cf.Rollback()
		if err != nil && err != io.EOF && !missingTable(err) {
			e.logf(slog.LevelDebug, "cleolease: no inline claim", "scope", l.scope, "lane", l.lane, "err", err)
		}
		return nil
	}
	l.epochs.note(epoch)
	// No active row names this process (the statement's guard): Open's
	// sweep of such rows has nothing left to do.
	e.sweepDue.Store(false)
	e.stats.Claims.Add(1)
	e.stats.InlineClaims.Add(1)
	g := &grant{id: id, epoch: epoch, at: time.Now()}
	g.inline.Store(true)
	return g
}

// wanted reports whether another process announces that it waits for the
// lane, or whether that cannot be told (then true).
func (l *laneState) wanted() bool {
	w, err := l.e.locks.AnyWants(l.want)
	return err != nil || w
}

// Inline reports whether the Hold's grant was claimed inside the caller's
// transaction (InlineConfirmer) and is not settled yet: the caller must
// call Fencing.EndInline before its COMMIT.
func (h *Hold) Inline() bool { return h.g != nil && h.g.inline.Load() }

// Exposing tells the Hold that the caller's SQL may end the transaction
// its grant was claimed in (a COMMIT or END among the caller's own
// statements): an inline grant then becomes visible before EndInline. The
// engine starts listening first (if it does not yet), since nothing may
// name a process to others before it listens: a waiter whose
// registration such a process refused would take the row for one its
// engine does not hold (reclaimable). Nothing for another grant.
func (h *Hold) Exposing() {
	if h.Inline() {
		h.l.e.listenLate()
	}
}

// EndInline settles a grant claimed inside this transaction (Hold.Inline),
// on q — the transaction's connection — after Check passed and just
// before COMMIT; for any other grant it does nothing. open reports that
// the transaction is still open (as for Check); last that this is the
// Hold's last transaction (the driver takes a Hold per write).
//
// The grant is released in the same transaction when this is the Hold's
// last and no more work of this process is expected on the lane: none
// waits at the gate, and this process's previous hold of the lane did not
// end within Linger (a process that writes that often would have kept the
// row lingering anyway). The lane is then free again when the transaction
// commits, and nothing ever named this process outside it: no claim, no
// release, no doorbell, no heartbeat — a short-lived process's one write
// costs one write transaction, as without the lease. Otherwise the row is
// kept: this process starts listening (so that waiters can register) and
// holds the row like one it claimed, from the COMMIT on. A transaction
// that is no longer open (the caller's SQL ended it, and may have
// committed the grant) is left to Release, which reads the row.
//
// err is set only when the release failed and q's transaction must be
// rolled back (the caller fails its commit with err).
func (f *Fencing) EndInline(ctx context.Context, q driver.QueryerContext, open, last bool) error {
	h := f.h
	g := h.g
	if g == nil || !g.inline.Load() {
		return nil
	}
	l := h.l
	wanted := open && !f.self && l.wanted()
	switch {
	case f.self:
		// The transaction removed the row itself: Committed ends the grant.
		g.inline.Store(false)
		return nil
	case !open:
		return nil // Release settles it by reading the row (endInline)
	case !last || wanted || l.keepInline():
		// A waiter that arrived during this transaction found the lane
		// free and could neither register nor queue: the row is kept,
		// visible from the COMMIT on, and its hand-off waits for the
		// waiters' registrations (gather) so that they are served in
		// their order, not in the order they reach the write lock.
		l.e.listenLate()
		if wanted {
			g.gatherBy.Store(-1) // counted from the hold's end (release)
		}
		if l.keepRow(g) {
			return nil
		}
		// The engine is closing: released here after all.
	}
	if err := l.e.fault("inline/release"); err != nil {
		return err
	}
	args := []driver.NamedValue{{Ordinal: 1, Value: g.id}, {Ordinal: 2, Value: l.e.holderID},
		{Ordinal: 3, Value: g.epoch}, {Ordinal: 4, Value: l.e.nowMS()}}
	rows, err := q.QueryContext(ctx, inlineReleaseSQL, args)
	if err == nil {
		err = rows.Next(make([]driver.Value, 1))
		rows.Close()
	}
	if err != nil && err != io.EOF && !missingTable(err) {
		return err
	}
	g.inline.Store(false)
	return nil
}

// keepRow makes the inline grant g, still inside its open transaction,
// the row this process holds, and reports true; while the engine closes
// it reports false and changes nothing (no linger watcher would pass the
// row on).
func (l *laneState) keepRow(g *grant) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	g.inline.Store(false)
	l.setRowLocked(g)
	return true
}

// keepInline reports whether an inline grant's commit keeps the row: more
// of this process's work waits at the gate, or its previous hold of the
// lane ended within Linger.
func (l *laneState) keepInline() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gate.queuedLocked() {
		return true
	}
	last := l.held.turn.lastRelease
	return l.e.opts.Linger > 0 && !last.IsZero() && time.Since(last) < l.e.opts.Linger
}

// adoptInline makes an inline grant the row this process holds, as if a
// claim had got it: listening first, so that a waiter that finds the row
// once it commits can register. While the engine closes (no linger
// watcher runs any more) the row is handed on or released at once
// instead, as keepLate does.
func (l *laneState) adoptInline(g *grant) {
	if !g.inline.CompareAndSwap(true, false) {
		return
	}
	l.mu.Lock()
	closing := l.closing
	l.mu.Unlock()
	if closing {
		l.handOff(g, "released at close")
		return
	}
	l.e.listenLate()
	l.setRow(g)
}

// endInline settles, at the end of its Hold, an inline grant that
// EndInline never settled: its transaction rolled back, failed, or ended
// in the caller's own SQL. The row decides, read on the engine's
// connection: one that names this process at the grant's epoch was
// committed after all and is adopted (then released or handed on as
// usual); otherwise the claim went with the rollback. An unreadable row
// is adopted: the release that follows finds out.
func (l *laneState) endInline(g *grant) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := l.readActive(ctx)
	if err != nil || (r != nil && r.id == g.id && r.h.ID == l.e.holderID && r.epoch == g.epoch) {
		l.adoptInline(g)
		return
	}
	g.inline.Store(false)
}

// inlineGather bounds how long the hand-off of an inline grant that other
// processes wanted at its COMMIT waits, from the end of its hold, for
// every process that announces a want to have registered or written its
// queue row: they found the lane free during the transaction, so they
// could do neither then, and wait for SQLite's write lock, trying again
// every millisecond at most (claimRun.run's back-off); once they find the
// row they queue and register, and the hand-off serves them in their
// order. The bound (selfEnqueueAfter, the time a registered waiter relies
// on its registration alone) is reached only when a waiter is stalled —
// as a grant to a stalled waiter would keep the lane idle too — and stays
// well inside IdleBound.
const inlineGather = selfEnqueueAfter

// gatherMaxWants caps how many wants gather counts (as status does): more
// waiters than that are never registered within inlineGather anyway.
const gatherMaxWants = 1000

// gatherPoll is how often gather reads the queue for the waiters' rows
// (registrations wake it at once).
const gatherPoll = time.Millisecond

// gathering reports whether g's hand-off is still waiting for the
// registrations of the waiters its inline transaction kept out (gatherBy).
func (g *grant) gathering(now time.Time) bool {
	by := g.gatherBy.Load()
	return by < 0 || (by != 0 && now.UnixNano() < by)
}

// gatherFrom starts g's gather window (inlineGather) at now, the end of
// the hold that kept it: the COMMIT it waited for may take longer than
// the window (a fresh WAL is synced).
func (g *grant) gatherFrom(now time.Time) {
	if g.gatherBy.Load() < 0 {
		g.gatherBy.Store(now.Add(inlineGather).UnixNano())
	}
}

// gather waits, before g is handed on, until every process that
// announces a want has registered with this one or written its queue row,
// or until g's gatherBy (see inlineGather), whichever comes first; the
// doorbell wakes it at each registration, and it reads the queue every
// gatherPoll. It returns at once for any other grant. The caller owns the
// gate, and no transaction of this process is open on the file.
func (l *laneState) gather(g *grant) {
	g.gatherFrom(time.Now()) // (the hold's end started it, normally)
	for g.gathering(time.Now()) {
		bell := l.e.bell.wait()
		n, err := l.e.locks.CountWants(l.want, gatherMaxWants)
		if err != nil {
			break
		}
		seen := map[string]bool{}
		l.mu.Lock()
		for id := range l.inbox.pending {
			seen[id] = true
		}
		l.mu.Unlock()
		if len(seen) < n {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			ws, err := readQueue(ctx, l.e.db(), l.scope, l.lane)
			cancel()
			if err != nil && !isBusy(err) {
				break
			}
			for _, w := range ws {
				if w.h.ID != l.e.holderID {
					seen[w.h.ID] = true
				}
			}
		}
		if len(seen) >= n {
			break
		}
		t := time.NewTimer(min(gatherPoll, time.Until(time.Unix(0, g.gatherBy.Load()))))
		select {
		case <-bell:
		case <-t.C:
		}
		t.Stop()
	}
	g.gatherBy.Store(0)
}
