package lease

import (
	"context"
	"time"
)

type gateWaiter struct {
	ch      chan struct{}
	granted bool
}

// enter waits for the in-process gate in arrival order.
func (l *laneState) enter(ctx context.Context, bound *waitBound) error {
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
	case <-bound.C():
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
// The linger watcher is its only caller: when the gate is taken, the
// gate's next leave wakes the watcher again (recall), so that the look it
// could not take now is taken as soon as the gate frees.
func (l *laneState) tryEnter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy || l.waiters.Len() > 0 {
		l.recall = true
		return false
	}
	l.busy = true
	l.recall = false
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
		if !l.watching || l.recall {
			l.recall = false
			l.startWatcherLocked()
		}
		// Otherwise the watcher's own timer (at most fallbackPoll away)
		// finds the lane idle: nobody asked it to look sooner.
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
