package lease

import (
	"container/list"
	"time"
)

// gate is a lane's in-process FIFO gate: it lets this process's writers of
// the lane through one at a time, in arrival order. Its fields are guarded
// by the lane's mu (Acquire's fast path, enterHeld, tests the gate and the
// held row under that one lock), so its methods are called with it held.
type gate struct {
	busy    bool      // the gate is owned
	waiters list.List // of *gateWaiter, in arrival order
}

// gateWaiter is one writer queued at the gate.
type gateWaiter struct {
	ch      chan struct{} // closed when the gate is passed to it
	granted bool          // the gate was passed to it
	el      *list.Element // its place in the queue
}

// freeLocked reports whether the gate is neither owned nor queued for.
func (g *gate) freeLocked() bool { return !g.busy && g.waiters.Len() == 0 }

// queuedLocked reports whether a writer waits for the gate.
func (g *gate) queuedLocked() bool { return g.waiters.Len() > 0 }

// ownedLocked reports whether the gate is owned.
func (g *gate) ownedLocked() bool { return g.busy }

// takeLocked makes the caller the gate's owner; the gate is free.
func (g *gate) takeLocked() { g.busy = true }

// joinLocked queues a writer behind the gate's owner and earlier waiters.
func (g *gate) joinLocked() *gateWaiter {
	w := &gateWaiter{ch: make(chan struct{})}
	w.el = g.waiters.PushBack(w)
	return w
}

// quitLocked takes w, which gave up waiting, out of the queue, and reports
// whether the gate had been passed to it meanwhile: the caller then owns
// it, and passes it on.
func (g *gate) quitLocked(w *gateWaiter) (granted bool) {
	if w.granted {
		return true
	}
	g.waiters.Remove(w.el)
	return false
}

// passLocked passes the gate from its owner to the first waiter and
// reports true, or frees it when nobody waits.
func (g *gate) passLocked() bool {
	front := g.waiters.Front()
	if front == nil {
		g.busy = false
		return false
	}
	w := g.waiters.Remove(front).(*gateWaiter)
	w.granted = true
	close(w.ch)
	return true
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
