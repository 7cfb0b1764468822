package lease

import (
	"context"
	"time"
)

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
		grace := l.turn.graceLeft(time.Now())
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
			g, idle, closing := l.row, time.Since(l.idleSince), l.closing
			l.mu.Unlock()
			if g != nil && !closing {
				if g.lost.Load() || idle >= l.e.opts.Linger || l.othersWaiting(context.Background()) {
					l.mu.Lock()
					l.turn.missed()
					l.mu.Unlock()
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
			done := l.row == nil || l.closing
			if done {
				l.watching = false
			}
			l.mu.Unlock()
			if done {
				return
			}
			t.Reset(fallbackPoll)
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
}
