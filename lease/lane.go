package lease

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// laneState is one (scope, lane) of an Engine: it composes the parts that
// each do one job for the lane, and holds the steps that span them —
// Acquire's path (acquire.go: enterHeld, enter, ensureRow, claim), the
// release and its hand-off (acquire.go, handoff.go, pass.go), and the
// bookkeeping below that moves the held row, the claim and the inbox
// together. Its parts:
//
//   - gate: the in-process gate, barging like sync.Mutex (gate.go);
//   - held: the row this process holds, its Hold's depth, idle time and
//     turn (heldrow.go, turn.go);
//   - watcher: the linger watcher (linger.go);
//   - claimSlot: what the lane knows of its claim in progress (claimslot.go;
//     the claim itself is a claimRun, claim.go);
//   - settler: the settle goroutine, which makes sure that a grant written
//     while a claim gave up is used or passed on (settle.go);
//   - inbox: other processes' waiters' registrations (inbox.go);
//   - epochs: what this process remembers of the lane's epochs (epochs.go).
//
// The first six share mu: an invariant spans them (Acquire's fast path
// takes the gate only while the row is held; a registration is kept or
// forwarded by the held row and the claim; the gate's leave wakes the
// watcher), so each is documented as guarded by the lane's mu and its
// methods that need it are named ...Locked. epochs and the inbox's looks
// are atomic.
type laneState struct {
	// Identity, set once.
	e           *Engine
	scope, lane string
	want        int64 // start of the lane's want region (see wantBits)

	mu        sync.Mutex
	closing   bool          // the engine is closing: no new Hold, no watcher (guarded by mu)
	gate      gate          // the in-process gate (gate.go)
	held      heldRow       // the row this process holds (heldrow.go)
	watcher   lingerWatcher // hands the idle row on or releases it (linger.go)
	claimSlot claimSlot     // the claim in progress, as the lane sees it (claimslot.go)
	settler   settler       // settles the lane after a claim that gave up (settle.go)
	inbox     inbox         // other processes' waiters' registrations (inbox.go)
	epochs    epochMemory   // the lane's epochs seen (epochs.go; atomic)
	waiting   atomic.Int64  // Acquire calls of this process waiting for the lane (observe.go)
	// gateArrival is the arrival ticket the gate's owner took when it
	// queued at the gate of a FIFO lane (0: none), which its claim uses
	// (fifo.go; guarded by mu).
	gateArrival int64
	// refused is the last row whose holder refused a registration
	// (ring); guarded by mu.
	refused refusedRing
}

func newLane(e *Engine, scope, lane string) *laneState {
	l := &laneState{e: e, scope: scope, lane: lane, want: wantBase(scope, lane), watcher: newLingerWatcher()}
	l.held.turn.grace = returnGrace
	l.gate.fifo = e.opts.Slice <= 0 // strict FIFO, as asked
	return l
}

// setRow records g (nil: none) as the row this process holds, once a
// claim ended: the claim's grant datagram is settled, and registrations
// arriving from now on are kept here (not forwarded to the process this
// one last handed the lane to).
func (l *laneState) setRow(g *grant) {
	if g != nil {
		l.epochs.note(g.epoch)
	}
	l.mu.Lock()
	l.setRowLocked(g)
	l.mu.Unlock()
}

// setRowLocked is setRow without noting the epoch; l.mu is held.
func (l *laneState) setRowLocked(g *grant) {
	l.held.setLocked(g)
	l.claimSlot.recordedLocked()
	if g != nil {
		l.inbox.passedTo, l.inbox.passed = "", passedGrant{}
		l.held.turn.started()
	}
}

// currentRow is the row this process holds (nil: none).
func (l *laneState) currentRow() *grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held.row
}

// dropRow records that grant g ended (if it is still the row held).
func (l *laneState) dropRow(g *grant) {
	l.mu.Lock()
	l.held.dropLocked(g)
	l.mu.Unlock()
}

// handedOn records that grant g ended with the lane handed to holder to
// ("": released): registrations arriving from now on follow the lane
// there once, or send their waiters to look (see registered).
func (l *laneState) handedOn(g *grant, to string) {
	l.handedOnTo(g, to, passedGrant{})
}

// handedOnTo is handedOn with what a Pass knows of the grant it wrote
// (inbox.passed; zero: nothing).
func (l *laneState) handedOnTo(g *grant, to string, p passedGrant) {
	l.mu.Lock()
	l.held.dropLocked(g)
	l.inbox.passedTo, l.inbox.passed = to, p
	l.mu.Unlock()
}

// markLost ends grant g because another process has the lane (or the row
// is gone), recording why: the first reason wins.
func (l *laneState) markLost(g *grant, why string) {
	g.why.CompareAndSwap(nil, &why)
	l.epochs.note(g.epoch)
	if g.lost.CompareAndSwap(false, true) {
		l.e.stats.Lost.Add(1)
		l.emit(Lost, 0, "")
		l.e.logf(slog.LevelWarn, "cleolease: lease lost", "scope", l.scope, "lane", l.lane, "epoch", g.epoch, "reason", *g.why.Load())
	}
	l.dropRow(g)
	l.forwardPending("") // another process has the lane: its waiters look
	// The row that replaced g's may name this process at another epoch
	// (a file restored under it): released if so (stale.go).
	l.checkStale()
}

// me is this process as the lane's rows and registrations name it.
func (l *laneState) me() holder {
	var slot int64
	if l.e.locks != nil {
		slot = l.e.locks.Slot()
	}
	return holder{ID: l.e.holderID, PID: l.e.pid, Start: l.e.holderStart(), Slot: slot}
}

// rowLeft reports whether the lane's row still names this process after
// shutdown: its release or hand-off at close failed.
func (l *laneState) rowLeft() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.held.row
	return g != nil && !g.lost.Load()
}

// shutdown is the lane's part of Engine.Close.
func (l *laneState) shutdown() {
	l.mu.Lock()
	l.closing = true
	g := l.held.row
	l.mu.Unlock()
	l.watcher.wake()
	if l.e.opts.MemoryOnly {
		return
	}
	if g != nil && !g.lost.Load() {
		if g.gathering(time.Now()) {
			// The registrations its hand-off must order may still be on
			// their way (a grant found before its datagram: claimRun.run;
			// an inline grant others wanted): a process that closes right
			// after its hold waits for them too, at most inlineGather.
			l.gather(g)
		}
		l.handOff(g, "released at close")
	}
	l.mu.Lock()
	claiming, settling := l.claimSlot.busyLocked(), l.settler.running
	nothingLate := l.claimSlot.nothingLateLocked(l.e.locks != nil)
	l.mu.Unlock()
	if nothingLate && !claiming && !settling {
		// No claim of this lane ever quit: there is no late grant to find,
		// and no write transaction at close (a process whose one write
		// was claimed inline never opens the engine's connection).
		return
	}
	if claiming || settling {
		// A claim still waits (its caller's Acquire), or has its grant:
		// its own exit leaves the queue and releases its want byte, and
		// settles if it quits (settle.go); touching them here would race
		// with it. A settle that runs settles once more before Close
		// returns (it sees closing).
		return
	}
	// No claim runs here, but one may have quit since the last settle: a
	// grant found under the write lock is handed on, not left naming a
	// process whose lane nobody watches any more.
	l.releaseLate("released at close")
}
