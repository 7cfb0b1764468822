package lease

import (
	"context"
	"time"
)

// lingerWatcher is the lane's linger watcher: a goroutine (watch) that
// runs while this process holds the lane's row, hands the row to another
// process as soon as one waits while no hold is active, and releases it
// after Linger idle. Its fields are guarded by the lane's mu (the gate's
// leave decides under that lock whether to wake it); kick is its wake-up.
type lingerWatcher struct {
	watching bool          // the watch goroutine runs
	recall   bool          // it wants waking at the gate's next leave (see tryEnter)
	kick     chan struct{} // wakes it (capacity 1)
}

func newLingerWatcher() lingerWatcher { return lingerWatcher{kick: make(chan struct{}, 1)} }

// startLocked records the watcher as running and reports whether the
// caller must start its goroutine (it was not running); a running watcher
// is woken instead.
func (w *lingerWatcher) startLocked() (start bool) {
	if !w.watching {
		w.watching = true
		return true
	}
	w.wake()
	return false
}

// stoppedLocked records that the watch goroutine ends.
func (w *lingerWatcher) stoppedLocked() { w.watching = false }

// wake wakes the watch goroutine, if it runs, at once.
func (w *lingerWatcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// askLocked asks for the watcher to be woken at the gate's next leave: it
// could not take the gate to look now.
func (w *lingerWatcher) askLocked() { w.recall = true }

// lookingLocked records that the watcher took the gate to look: its
// request to be woken is answered.
func (w *lingerWatcher) lookingLocked() { w.recall = false }

// neededLocked reports whether the gate's leave must start or wake the
// watcher (it does not run, or asked to be woken), answering the request.
func (w *lingerWatcher) neededLocked() bool {
	if !w.watching || w.recall {
		w.recall = false
		return true
	}
	return false
}

// startWatcherLocked starts the linger watcher, or wakes it if it runs;
// l.mu is held.
func (l *laneState) startWatcherLocked() {
	if l.watcher.startLocked() {
		l.e.wg.Add(1)
		go l.watch()
	}
}

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
		l.mu.Lock()
		grace := l.held.turn.graceLeft(time.Now())
		if grace > 0 && l.gate.ownedLocked() {
			grace = 0 // the writer came back: the gate's next leave wakes us
		}
		l.mu.Unlock()
		if grace > 0 {
			// The turn was kept for this process's writer: give it
			// returnGrace to come back before handing the lane off.
			t.Reset(grace)
		} else if l.tryEnter() {
			l.mu.Lock()
			g, idle, closing := l.held.row, l.held.idleForLocked(time.Now()), l.closing
			l.mu.Unlock()
			if g != nil && !closing {
				if g.lost.Load() || idle >= l.e.opts.Linger || l.othersWaiting(context.Background()) {
					l.mu.Lock()
					l.held.turn.missed()
					l.mu.Unlock()
					if !g.lost.Load() {
						l.gather(g)
						l.handOff(g, "released after linger")
					}
				}
			}
			l.mu.Lock()
			done := l.watchOverLocked()
			l.gate.passLocked() // to the next writer (not leaveLocked: this was the idle lane's look)
			l.mu.Unlock()
			if done {
				return
			}
			wait := l.e.opts.Linger - idle
			if wait > fallbackPoll || wait < 0 {
				wait = fallbackPoll
			}
			t.Reset(wait)
		} else {
			l.mu.Lock()
			done := l.watchOverLocked()
			l.mu.Unlock()
			if done {
				return
			}
			t.Reset(fallbackPoll)
		}
		select {
		case <-bell:
		case <-l.watcher.kick:
		case <-t.C:
		}
	}
}

// watchOverLocked reports whether the watcher's work is over (no row held,
// or the lane closing), recording it stopped if so.
func (l *laneState) watchOverLocked() bool {
	if l.held.row != nil && !l.closing {
		return false
	}
	l.watcher.stoppedLocked()
	return true
}
