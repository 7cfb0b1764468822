package lease

// How a queued claim waits (claimRun.await): for the doorbell, an exit
// watch or its fallback period, then one look at the lane's row.

import (
	"context"
	"sync/atomic"
	"time"
)

// await waits, queued, until the lane is handed to us (a grant), falls
// free or its holder is found dead (retry: attempt a claim again), or the
// context or wait bound ends the wait (an error, after leaving the queue).
// It reads the active row only when the doorbell names us, a process
// exited, or the fallback period passed.
func (c *claimRun) await(ctx context.Context, bound <-chan time.Time, fallback *time.Timer, retryIn time.Duration) (g *grant, retry bool, err error) {
	l := c.l
	look, nudged := !c.afterBusy, false
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
				r, err = readActive(context.WithoutCancel(ctx), l.e.db(), l.scope, l.lane)
			}
			switch {
			case err != nil && ctx.Err() != nil:
				g, err := c.abandon(ctx, ctx.Err())
				return g, false, err
			case err != nil && !isBusy(err):
				g, err := c.abandonWith(ctx, err)
				return g, false, err
			case err != nil: // SQLITE_BUSY: look again later
			case r != nil && r.h.ID == l.e.holderID && c.handedToUs(r.epoch):
				// Handed to us inside the previous holder's transaction,
				// which also removed our queue row.
				c.handed = true
				return &grant{id: r.id, epoch: r.epoch, at: time.Now()}, false, nil
			case r != nil && r.h.ID == l.e.holderID:
				// Names this process, but was not handed to this claim
				// (a restored or copied file's row): the claim
				// transaction takes it over (attempt).
				return nil, true, nil
			case r == nil:
				c.saw(nil)
				return nil, true, nil
			default:
				c.saw(r)
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
				case r.h.ID != c.rung || nudged || (c.rungEpoch != 0 && r.epoch != c.rungEpoch):
					// A new holder, one that was not holding yet when our
					// registration reached it, or the same holder at a
					// new epoch (it released the lane and took it again:
					// the registration it had, if any, went with the
					// release): tell it someone waits.
					c.rung, c.rungEpoch = r.h.ID, r.epoch
					c.registered = l.ring(r, c.reg)
				case c.rungEpoch == 0:
					c.rungEpoch = r.epoch
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
