package lease

import (
	"container/list"
	"time"
)

// starveAfter is how long a writer may wait at the gate before the gate
// turns to starvation mode (sync.Mutex's starvationThresholdNs).
const starveAfter = time.Millisecond

// gate is a lane's in-process gate: it lets this process's writers of the
// lane through one at a time, the way sync.Mutex does (its comment at the
// top of sync/mutex.go is the model).
//
// In normal mode a writer that finds the gate unowned while this process
// holds the lane's row takes it, even when others queue (enterHeld; a
// writer that may have to claim the row queues: enter): the one that
// just left and comes straight back keeps its warm connection, and no
// goroutine switch is paid per commit. A leave
// wakes only the first queued writer, which competes with such newcomers;
// if it loses, it goes back to the front of the queue. A writer that has
// waited starveAfter or more when it loses turns the gate to starvation
// mode: from then on a leave hands the gate straight to the first queued
// writer, and newcomers queue behind the others. Starvation mode ends
// when the writer handed the gate is the last one queued, or waited less
// than starveAfter. So no writer waits for ever, and the queue's order
// holds among the writers that queue. A FIFO gate (Options.Slice 0: the
// user asked for strict arrival order) is always in starvation mode.
//
// Its fields are guarded by the lane's mu (Acquire's fast path,
// enterHeld, tests the gate and the held row under that one lock), so its
// methods are called with it held.
type gate struct {
	fifo     bool      // strict arrival order: every leave hands the gate on (Slice 0)
	busy     bool      // the gate is owned
	starving bool      // starvation mode: leaves hand the gate to the first queued writer
	woken    bool      // a queued writer was woken and has not run yet (normal mode)
	waiters  list.List // of *gateWaiter, in arrival order (a woken writer that lost goes first)
}

// gateWaiter is one writer queued at the gate.
type gateWaiter struct {
	ch      chan struct{} // closed when it is woken or the gate is handed to it
	granted bool          // the gate was handed to it (starvation mode)
	woken   bool          // it was woken to compete for the gate (normal mode)
	since   time.Time     // when it first queued
	el      *list.Element // its place in the queue (nil while woken)
	// arrival, priority and enqueued place it among other processes'
	// waiters on a FIFO lane (fifo.go): the database's arrival ticket
	// taken when it queued (0: none), its Acquire's priority, and when it
	// queued by the engine's clock (ms, as a registration's Enqueued).
	arrival, priority, enqueued int64
}

// headLocked is the first writer queued at the gate (nil: none).
func (g *gate) headLocked() *gateWaiter {
	if f := g.waiters.Front(); f != nil {
		return f.Value.(*gateWaiter)
	}
	return nil
}

// freeLocked reports whether the gate is neither owned nor wanted by a
// queued or woken writer.
func (g *gate) freeLocked() bool { return !g.busy && g.waiters.Len() == 0 && !g.woken }

// openLocked reports whether a writer arriving now may take the gate at
// once: it is unowned, and not in starvation mode (or FIFO) with writers
// that came first.
func (g *gate) openLocked() bool {
	if g.busy {
		return false
	}
	return !(g.fifo || g.starving) || (g.waiters.Len() == 0 && !g.woken)
}

// queuedLocked reports whether a writer waits for the gate.
func (g *gate) queuedLocked() bool { return g.waiters.Len() > 0 || g.woken }

// ownedLocked reports whether the gate is owned.
func (g *gate) ownedLocked() bool { return g.busy }

// takeLocked makes the caller the gate's owner; the gate is open.
func (g *gate) takeLocked() { g.busy = true }

// joinLocked queues a writer arriving at now behind the gate's owner and
// the writers queued before it.
func (g *gate) joinLocked(now time.Time) *gateWaiter {
	w := &gateWaiter{ch: make(chan struct{}), since: now}
	w.el = g.waiters.PushBack(w)
	return w
}

// passLocked is the owner's leave: it hands the gate to the first queued
// writer (FIFO or starvation mode), or frees it and wakes that writer to
// compete for it (normal mode; not when a woken writer has yet to run).
// It reports whether a writer of this process will own the gate next —
// false when nobody queues: the gate is free.
func (g *gate) passLocked() bool {
	front := g.waiters.Front()
	if front == nil {
		g.busy = false
		g.starving = false
		return g.woken
	}
	if g.fifo || g.starving {
		w := g.waiters.Remove(front).(*gateWaiter)
		w.el = nil
		w.granted = true
		g.busy = true
		close(w.ch)
		return true
	}
	g.busy = false
	if !g.woken {
		w := g.waiters.Remove(front).(*gateWaiter)
		w.el = nil
		w.woken = true
		g.woken = true
		close(w.ch)
	}
	return true
}

// arriveLocked is w's turn to run after its channel closed, at now. It
// reports whether w owns the gate: it was handed the gate, or was woken
// and found it unowned. A woken writer that lost the gate to a newcomer
// goes back to the front of the queue, with a new channel to wait on, and
// turns the gate to starvation mode if it has waited starveAfter or more.
func (g *gate) arriveLocked(w *gateWaiter, now time.Time) bool {
	if w.granted {
		if g.starving && (g.waiters.Len() == 0 || now.Sub(w.since) < starveAfter) {
			g.starving = false
		}
		return true
	}
	w.woken = false
	g.woken = false
	if !g.busy {
		g.busy = true
		return true
	}
	if now.Sub(w.since) >= starveAfter {
		g.starving = true
	}
	w.ch = make(chan struct{})
	w.el = g.waiters.PushFront(w)
	return false
}

// quitLocked takes w, which gave up waiting, out of the gate, and reports
// whether the caller must leave the gate (leaveLocked) for it: the gate
// was handed to w meanwhile (the caller owns it), or w was woken and the
// gate is still unowned (the next writer must be woken, or the gate found
// free).
func (g *gate) quitLocked(w *gateWaiter) (leave bool) {
	switch {
	case w.granted:
		return true
	case w.woken:
		w.woken = false
		g.woken = false
		if !g.busy {
			g.busy = true // leaveLocked passes it on
			return true
		}
		return false
	}
	g.waiters.Remove(w.el)
	w.el = nil
	return false
}

// tryEnter takes the gate only if it is free and nobody queues for it.
// The linger watcher is its only caller: when the gate is taken, the
// gate's next leave wakes the watcher again (recall), so that the look it
// could not take now is taken as soon as the gate frees.
func (l *laneState) tryEnter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gate.freeLocked() {
		l.watcher.askLocked()
		return false
	}
	l.gate.takeLocked()
	l.watcher.lookingLocked()
	return true
}

func (l *laneState) leave() {
	l.mu.Lock()
	l.leaveLocked()
	l.mu.Unlock()
}

// leaveLocked passes the gate to the next writer of this process or, with
// none, frees it and lets the linger watcher look at the idle lane.
func (l *laneState) leaveLocked() {
	if l.gate.passLocked() {
		return
	}
	l.held.idleLocked(time.Now())
	if l.held.row != nil && !l.closing && !l.e.opts.MemoryOnly {
		if l.watcher.neededLocked() {
			l.startWatcherLocked()
		}
		// Otherwise the watcher's own timer (at most fallbackPoll away)
		// finds the lane idle: nobody asked it to look sooner.
	}
}

func (l *laneState) hasWaiters() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gate.queuedLocked()
}
