package lease

// How a lane makes sure that a grant written for this process while its
// claim was giving up is used or passed on, whether or not a datagram
// tells of it (issue 28): the settle.
//
// A claim that only registered quits without SQLite's write lock (quit:
// the holder's transaction may keep it for long). It has released its
// want byte first, then read the row. A hand-off that tested the byte
// before that and has not committed yet may still grant this process the
// lane; once it commits, no process waits for the grant, and the row
// names a live process that does not know it holds the lane: every other
// waiter registers with it and polls, and nothing reclaims a live holder.
// The grant datagram used to be the only way to learn of it, and a
// datagram may be lost (a full socket, a receiving goroutine that failed)
// or arrive while the claim is still ending. So the lane settles instead,
// by reading the database.
//
// What the settle relies on: every transaction that grants a waiter the
// lane tests, inside that transaction (under SQLite's write lock), that
// the waiter still announces its wait — its want byte (stillWaiting; a
// waiter known from a queue row whose byte cannot be tested is given the
// benefit of the doubt): handOff (handoff.go: the registration's
// candidate, then head), Fencing.Pass (pass.go: first, in the caller's
// transaction, which holds the write lock from its BEGIN IMMEDIATE on:
// FenceBegin's contract), a claim that finds the lane free or its holder
// dead (claim.go, attempt: head), Break (status.go: head), and the queue
// rows written for registrations (flushPending). The grant datagram is
// sent only after the grant commits. So once the claim has released its
// byte,
// at most one transaction that may still grant it — the one that held the
// write lock at that moment — is in flight, and it starts from the row
// the claim read when it quit (a transaction committed before that read
// shows in it). The lane has settled when either
//
//   - it takes the write lock once (BEGIN IMMEDIATE, a single try on the
//     engine's connection, busy_timeout 0): that transaction has ended,
//     and every later one tests a byte that is no longer held. The same
//     transaction removes a queue row written for the claim meanwhile
//     (flushPending) and reads the row; or
//   - the row, read without the lock, names another holder or epoch than
//     the one the claim read when it quit (or no holder, where it named
//     one): that transaction has committed (epochs never repeat).
//
// Until then it tries again after a capped back-off. A row that names
// this process, seen either way, is adopted (adopt): the lane records it
// as held, idle, and the linger watcher hands it on or releases it.

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"
)

// settler is a lane's settle goroutine as the rest of the lane sees it:
// whether it runs and what it has still to find out. Its fields are
// guarded by the lane's mu (a claim's end, a grant datagram and the
// goroutine's own steps are judged with the claim slot and the held row
// under that one lock).
type settler struct {
	running bool   // the settle goroutine runs (at most one per lane)
	quit    bool   // a claim quit without settling: see settle.go
	gen     int64  // counts those quits: a settle clears quit only for the one it settled
	seen    rowRef // the row the last of them read when it quit
	ring    bool   // a grant datagram arrived: read the row once more
	check   bool   // someone waits for a lane this process does not hold: release a row naming it (stale.go)
}

// rowRef names a lane's active row by its holder and epoch (holder "": no
// active row); known is false when it could not be read.
type rowRef struct {
	holder string
	epoch  int64
	known  bool
}

// refOf is r's rowRef (r nil: no active row).
func refOf(r *row) rowRef {
	if r == nil {
		return rowRef{known: true}
	}
	return rowRef{holder: r.h.ID, epoch: r.epoch, known: true}
}

// quitLocked records a claim that quit without settling, having read
// seen, and reports whether the caller must start the settle goroutine
// (none runs).
func (s *settler) quitLocked(seen rowRef) (start bool) {
	s.quit, s.seen = true, seen
	s.gen++
	return s.startLocked()
}

// ringLocked records a grant datagram that reached no claim, and reports
// whether the caller must start the settle goroutine (none runs). While
// one runs, datagrams cost it one more read, never another goroutine: a
// forged 'g' datagram (the Windows mailslot is writable by everyone)
// cannot start one each time.
func (s *settler) ringLocked() (start bool) {
	s.ring = true
	return s.startLocked()
}

// startLocked records the goroutine as running and reports whether it
// was not.
func (s *settler) startLocked() bool {
	if s.running {
		return false
	}
	s.running = true
	return true
}

// settledLocked records that the quit counted gen has settled.
func (s *settler) settledLocked(gen int64) {
	if s.gen == gen {
		s.quit = false
	}
}

// stoppedLocked records the goroutine ending, with nothing left to do.
func (s *settler) stoppedLocked() {
	s.running, s.quit, s.ring, s.check = false, false, false, false
}

// Settle back-off: how long the settle waits before it tries again while
// the write lock is taken and the row has not moved. It stays below a
// registered waiter's poll (registeredPoll): a grant adopted late costs
// the other waiters at most about that long.
const (
	settleMin = time.Millisecond
	settleMax = registeredPoll
)

// startSettle starts the lane's settle goroutine, which the caller has
// recorded as running; it reports false, and starts nothing, once the
// engine is closing (Close waits for the goroutines it tracks, and adds
// none after that).
func (l *laneState) startSettle() bool { return l.e.goTracked(l.settle) }

// settleHere settles the lane on the caller's goroutine, waiting for
// SQLite's write lock (releaseLate), when the engine closes and starts no
// settle goroutine any more (startSettle reported false). The caller has
// recorded the settle as running, so that the lane's shutdown leaves the
// lane to it.
func (l *laneState) settleHere() {
	l.releaseLate("released at close")
	l.mu.Lock()
	l.settler.stoppedLocked()
	l.claimSlot.settledLocked()
	l.mu.Unlock()
}

// settle is the lane's settle goroutine (see settle.go). It ends when
// nothing is left to find out, when a claim of this process begins (a
// running claim finds a grant itself: await reads the row at once, then
// at every doorbell ring and fallback poll; its own end starts a settle
// again if it quits without settling) or the row is held, and when the
// engine closes: then it settles once more under the write lock, waiting
// for it (releaseLate), since no watcher runs any more to pass a grant
// on. A step that cannot tell yet waits settleMin to settleMax; Close
// cuts the wait short (hbCtx ends when Close stops the engine's
// goroutines).
func (l *laneState) settle() {
	bo := backoff{min: settleMin, max: settleMax}
	var gen int64
	closed := false // the engine's goroutines were told to stop (hbCtx)
	for {
		l.mu.Lock()
		s := &l.settler
		switch {
		case l.claimSlot.busyLocked() || l.held.row != nil:
			// The claim or the row held takes over (and with it any grant
			// datagram recorded: claimSlot.incoming).
			s.stoppedLocked()
			l.mu.Unlock()
			return
		case l.closing || closed:
			// The lane's shutdown left the lane to this goroutine (it
			// runs): it leaves the queue and hands on a grant it finds,
			// as shutdown would have.
			l.mu.Unlock()
			l.releaseLate("released at close")
			l.mu.Lock()
			s.stoppedLocked()
			l.claimSlot.settledLocked()
			l.mu.Unlock()
			return
		case !s.quit && !s.ring && !s.check:
			s.stoppedLocked()
			l.claimSlot.settledLocked()
			l.mu.Unlock()
			// Registrations kept for a grant that is not ours after all
			// follow the lane: their waiters look again.
			l.forwardPending("")
			return
		}
		job := *s
		s.ring, s.check = false, false
		l.mu.Unlock()
		if job.gen != gen {
			gen = job.gen
			bo.reset()
		}
		again, err := l.settleStep(job)
		switch {
		case errors.Is(err, ErrFileChanged):
			// The path names another file now: nothing of this lane is
			// left to settle there.
			l.mu.Lock()
			s.stoppedLocked()
			l.claimSlot.settledLocked()
			l.mu.Unlock()
			return
		case again:
			closed = bo.sleep(l.e.hbCtx, nil) != nil
		}
	}
}

// settleStep takes one step of the settle job, and reports whether it
// must try again after a back-off (the lane has not settled yet). A row
// that names this process is adopted when it is a grant in flight to a
// claim that gave up (lateGrant), and released otherwise (stale.go).
func (l *laneState) settleStep(job settler) (again bool, err error) {
	ctx, cancel := context.WithTimeout(l.e.hbCtx, 5*time.Second)
	defer cancel()
	var r *row
	locked := false
	if job.quit {
		r, err = l.settleTx(ctx, job)
		locked = err == nil
		switch {
		case err == errClaimBegun:
			return false, nil // the loop stops: the claim takes over
		case errors.Is(err, ErrFileChanged):
			return false, err
		}
	}
	if !locked {
		// The write lock is taken (or the file refused the transaction),
		// or the job only asks for a look: one read, without the lock,
		// says whether the lane moved, and whether it names this process.
		// Never a read of a file that was renamed over or deleted (see
		// tryImmediate).
		rerr := l.e.checkFile(false)
		if errors.Is(rerr, ErrFileChanged) {
			return false, rerr
		}
		if rerr == nil {
			r, rerr = readActive(context.WithoutCancel(ctx), l.e.db(), l.scope, l.lane)
		}
		if rerr != nil {
			if job.ring || job.check {
				l.mu.Lock()
				l.settler.ring = l.settler.ring || job.ring // read it again after the back-off
				l.settler.check = l.settler.check || job.check
				l.mu.Unlock()
			}
			return true, rerr
		}
		if l.e.os.holes.forgetLateGrant && !job.quit && !job.ring && r != nil && l.newEpoch(r.epoch) {
			// The seeded revert of issue 28's settle (sim_bug_lategrant_test.go)
			// also leaves a forgotten late grant to the check, which
			// would otherwise release it.
			return false, nil
		}
		if r != nil && r.h.ID == l.e.holderID && !l.lateGrant(job, r) {
			// Not a grant of this process: released under the write
			// lock, as soon as it is free.
			r, err = l.settleTx(ctx, job)
			switch {
			case err == errClaimBegun:
				return false, nil
			case errors.Is(err, ErrFileChanged):
				return false, err
			case WriteRefused(err):
				// A file that refuses writes (a LiteFS replica) grants
				// nothing to anyone either: the row waits for a writer,
				// and the quit, if any, has settled.
				if job.quit {
					l.mu.Lock()
					l.settler.settledLocked(job.gen)
					l.mu.Unlock()
				}
				return false, nil
			case err != nil:
				l.mu.Lock()
				l.settler.check = true
				l.mu.Unlock()
				return true, nil
			}
			locked = true
		}
	}
	if r != nil && r.h.ID == l.e.holderID {
		// (settleTx released the row if it was not a late grant.)
		l.adopt(r)
		return false, nil
	}
	switch {
	case !job.quit:
		return false, nil // the datagram's grant is not (or no longer) ours
	case locked, WriteRefused(err):
		// (A file that refuses writes refuses every grant too.)
	case job.seen.known && refOf(r) != job.seen:
		// The transaction in flight when the claim quit has ended
		// without granting it the lane.
	default:
		return true, nil
	}
	l.mu.Lock()
	l.settler.settledLocked(job.gen)
	l.mu.Unlock()
	return false, nil
}

// lateGrant reports whether r, a row that names this process while it
// holds no grant of the lane and no claim of it runs, may be a grant made
// to a claim that gave up (or whose grant datagram reached no claim):
// only then is it adopted. A job that only checks (checkStale) follows no
// claim that could have been granted; a grant is above every epoch this
// process has seen the lane carry (the claims' reads included: claimRun.saw
// notes them), and above the row the quitting claim read, whoever it named:
// a grant to that claim follows that row, so a row at or below its epoch
// naming this process is one a restore brought back (or one this claim was
// not handed), whose epoch + 1 the file has issued already.
func (l *laneState) lateGrant(job settler, r *row) bool {
	if !job.quit && !job.ring {
		return false
	}
	if !l.newEpoch(r.epoch) {
		return false
	}
	if l.e.os.holes.unboundedLateGrant {
		return true // the seeded hole (holes)
	}
	return !(job.quit && job.seen.known && r.epoch <= job.seen.epoch)
}

// settleTx is one try (no wait for SQLite's write lock) of the settle's
// transaction: it removes this process's queue rows of the lane and reads
// the lane's row, releasing it if it names this process and is not a
// late grant (lateGrant; nil is returned then). SQLITE_BUSY comes back,
// and errClaimBegun when a claim of this process began meanwhile (its
// queue row is its own).
func (l *laneState) settleTx(ctx context.Context, job settler) (*row, error) {
	var r *row
	err := l.e.tryImmediate(ctx, "settle", func(ctx context.Context, c *sql.Conn) error {
		r = nil // (a body may run again)
		l.mu.Lock()
		busy, held := l.claimSlot.busyLocked(), l.held.row
		l.mu.Unlock()
		if busy {
			return errClaimBegun
		}
		var err error
		r, err = l.dequeueRead(ctx, c)
		if err != nil || r == nil || r.h.ID != l.e.holderID || l.lateGrant(job, r) ||
			(held != nil && held.id == r.id && held.epoch == r.epoch) {
			return err
		}
		err = l.retireRow(ctx, c, r)
		r = nil
		return err
	})
	return r, err
}

// errClaimBegun ends a settle step that met a claim of this process: the
// claim takes over (see settle).
var errClaimBegun = errors.New("a claim began")

// dequeueRead removes this process's queue rows of the lane and reads the
// lane's active row; the caller is inside BEGIN IMMEDIATE. Tables it
// cannot trust read as a lane without a row: there is nothing to adopt,
// and leaving the queue still holds.
func (l *laneState) dequeueRead(ctx context.Context, c *sql.Conn) (*row, error) {
	if err := dequeue(ctx, c, l.scope, l.lane, l.e.holderID); err != nil {
		return nil, err
	}
	r, err := readActive(ctx, c, l.scope, l.lane)
	if errors.Is(err, ErrUntrusted) {
		return nil, nil
	}
	return r, err
}

// adopt takes over the lane's row r, which names this process while no
// claim of this process waits for it (granted just after its waiter gave
// up), unless a claim runs or has just got its grant, the row is held, or
// the engine is closing; it leaves the lane idle, and the linger watcher
// hands the row on or releases it. If a writer of this process owns the
// gate, that writer finds the row held (ensureRow), or its claim finds
// the row naming this process (attempt); its leave starts the watcher.
func (l *laneState) adopt(r *row) {
	g := &grant{id: r.id, epoch: r.epoch, at: time.Now()}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held.row != nil || l.claimSlot.busyLocked() || l.closing {
		return // (its epoch is not noted: a claim may still take it as its grant, handedToUs)
	}
	l.epochs.note(r.epoch)
	l.setRowLocked(g)
	l.held.idleLocked(time.Now())
	if !l.gate.ownedLocked() {
		l.startWatcherLocked()
	}
	l.e.logf(slog.LevelInfo, "cleolease: adopted a lane granted after its waiter gave up; passing it on",
		"scope", l.scope, "lane", l.lane, "epoch", r.epoch)
}

// releaseLate settles the lane while the engine closes, when no linger
// watcher will run any more: it leaves the queue under SQLite's write lock
// (leaveQueue: after the want byte was released, so no grant can follow)
// and hands on, or releases, a grant it finds there (why says so).
func (l *laneState) releaseLate(why string) {
	g, err := l.leaveQueue(context.Background(), l.newEpoch)
	if err == nil && g != nil {
		l.epochs.note(g.epoch)
		l.handOff(g, why)
	}
}

// keepLate records g, a grant this process found after its claim gave up
// (abandon), as the row held: the claim's caller then leaves the gate,
// which starts the linger watcher to pass it on. When the engine is
// closing no watcher runs: it is handed on at once.
func (l *laneState) keepLate(g *grant) {
	l.epochs.note(g.epoch)
	l.mu.Lock()
	closing := l.closing
	if !closing {
		l.setRowLocked(g)
	}
	l.mu.Unlock()
	if closing {
		l.handOff(g, "released at close")
	}
}
