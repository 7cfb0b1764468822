package lease

import (
	"context"
	"log/slog"
	"strings"

	"github.com/cleocode/cleolease/internal/platform"
)

// Following the liveness files (issue 28 item 2). A temporary-file
// cleaner or a user's rm may remove the sidecar (or the portable tier's
// lock directory, or a sidecar directory's nonce) while processes use it;
// a process that opens the database afterwards creates new ones. The
// engine's Locks follow them (platform.Follower: this process takes its
// lifetime lock in the new file too, keeps the old one, and tests wants
// in both), and the engine asks them to look, without a cost on the
// Acquire and Release paths:
//
//   - (a) at the process's next lease use (Acquire: followIfDue, before a
//     claim announces its want), once the file watch has reported the
//     sidecar's (or the nonce's) unlink, rename or link-count change
//     (platform.SidecarWatch: inotify, Linux tier) — the report itself
//     only records it (followDue);
//   - (b) at once when a registration reaches this process from a waiter
//     whose recorded mark (holder_start's 4th field) names a file this
//     process does not see (noteWaiter): a process that opened after the
//     removal, and uses the directory;
//   - (c) on every heartbeat tick, every TTL/3, whatever happened: the
//     portable tier, Windows, a lost event, a waiter that could not
//     register.
//
// (b) and (c) run followSidecar on the heartbeat goroutine, (a) on the
// caller's, one at a time. The watch's report never creates anything:
// a directory removed whole (rm -r, a test's temporary directory while
// the database is still open) would otherwise get a new sidecar from the
// report of its first unlink, and its removal fail "directory not
// empty". Nothing moves once the database file itself is gone or
// replaced (checkFile): there is nothing left to coordinate, and the
// engine refuses every later use with ErrFileChanged.
//
// Until a holder moves, a process that opened after the removal finds no
// lock of it in the new file: the holder's row names the removed file
// (its mark), so the newcomer cannot test its liveness lock and judges it
// by its pid (alive, elsewhere: probeHolder), and a holder with a
// doorbell on this file is not reclaimed (reclaimable) but registered
// with — which moves it (b).
// A move changes this process's mark: holder_start from then on names the
// new file (holderStart), and the file watch follows it. With a sidecar
// directory, the nonce file is re-read at the same moments (see
// sidecarproof.go): a nonce written by a process that found it removed is
// adopted and recorded, so that process is served, not refused.
//
// Where the kernel cannot report a removal and no waiter registers, a
// waiter that opened after it is served within about TTL/3 (the next
// heartbeat); on the Linux tier, at once.

// kickFollow asks the heartbeat goroutine to check the liveness files now.
func (e *Engine) kickFollow() {
	select {
	case e.followKick <- struct{}{}:
	default:
	}
}

// sidecarGone is the file watch's report of a removed sidecar (nil when
// there is none).
func (e *Engine) sidecarGone() <-chan struct{} {
	if sw := e.sidecarWatch(); sw != nil {
		return sw.SidecarGone()
	}
	return nil
}

// sidecarWatch is the file watch, when it reports the sidecar's removal.
func (e *Engine) sidecarWatch() platform.SidecarWatch {
	if e.bell == nil {
		return nil
	}
	sw, _ := e.bell.p().watch.(platform.SidecarWatch)
	return sw
}

// sidecarRemoved is the heartbeat goroutine's answer to the file watch's
// report of a removal: only a record of it (followDue), which the next
// lease use follows (followIfDue).
func (e *Engine) sidecarRemoved() { e.followDue.Store(true) }

// followIfDue is followSidecar when a removal was recorded and not yet
// followed (followDue): Acquire's first step, at the cost of an atomic
// load otherwise.
func (e *Engine) followIfDue() {
	if e.followDue.Load() {
		e.followSidecar()
	}
}

// followSidecar moves this process to the liveness files their paths name
// now, if they were replaced, and adopts a new nonce of its sidecar
// directory; not once the database file is gone or replaced. It runs on
// the heartbeat goroutine, and on a claim's when a move is due
// (followIfDue), one at a time.
func (e *Engine) followSidecar() {
	if e.os.holes.ignoreSidecarMove {
		return
	}
	e.followMu.Lock()
	defer e.followMu.Unlock()
	e.followDue.Store(false)
	if err := e.checkFile(true); err != nil {
		e.logf(slog.LevelDebug, "cleolease: liveness files not followed: the database file is not the one opened", "err", err)
		return
	}
	if f, ok := e.locks.(platform.Follower); ok {
		moved, err := f.Refresh()
		if err != nil {
			e.logf(slog.LevelDebug, "cleolease: liveness files not followed yet", "err", err)
		}
		if moved {
			start := withMark(e.start, e.locks.Mark())
			e.movedStart.Store(&start)
			if sw := e.sidecarWatch(); sw != nil {
				sw.Follow(e.locks.WatchPath())
			}
			e.logf(slog.LevelInfo, "cleolease: liveness files removed or replaced while in use; this process now also keeps its locks in the new ones", "mark", e.locks.Mark())
			e.checkLockingAfterMove()
			e.bell.wake() // a lingering holder looks at the waiters it could not see
		}
	}
	e.followNonce()
}

// followNonce re-reads the sidecar directory's nonce file (creating it
// when it is gone) and records a changed nonce in place of this process's
// earlier one (recordMoved); a failed record is tried again at the next
// look.
func (e *Engine) followNonce() {
	p := e.proof
	if p == nil || p.path == "" {
		return
	}
	due, err := p.reread()
	if err != nil {
		e.logf(slog.LevelDebug, "cleolease: sidecar nonce not read", "err", err)
	}
	if !due {
		return
	}
	if sw := e.sidecarWatch(); sw != nil {
		sw.Follow(p.path)
	}
	ctx, cancel := context.WithTimeout(e.hbCtx, e.opts.TTL/3)
	defer cancel()
	if err := e.recordMoved(ctx); err != nil {
		e.logf(slog.LevelDebug, "cleolease: new sidecar nonce not recorded yet", "err", err)
	}
}

// registration is the doorbell's onWait: a waiter's registration, first
// checked for a mark this process does not see (noteWaiter).
func (e *Engine) registration(r registration, withGrant bool) {
	e.noteWaiter(r.Slot, r.Start)
	e.registered(r, withGrant)
}

// noteWaiter asks for the liveness files to be checked (kickFollow) when
// a waiter of this boot at slot recorded, in its holder_start start, a
// mark that names a file this process does not see: it may have opened
// after the sidecar was removed. A stat, on the registration path only.
func (e *Engine) noteWaiter(slot int64, start string) {
	f, ok := e.locks.(platform.Follower)
	if !ok || slot <= 0 || e.os.holes.ignoreSidecarMove {
		return
	}
	parts := strings.SplitN(start, "/", 5)
	if len(parts) < 4 || parts[3] == "" || parts[0] != bootID() {
		return // no mark, or another host's
	}
	if !f.Sees(slot, parts[3]) {
		e.kickFollow()
	}
}

// withMark is the holder_start start (see the layout in liveness.go) with
// its mark replaced by mark: the same process, its lifetime lock on
// another file.
func withMark(start, mark string) string {
	parts := strings.SplitN(start, "/", 5)
	for len(parts) < 4 {
		parts = append(parts, "")
	}
	parts[3] = mark
	return strings.Join(parts, "/")
}

// holderStart is this process's holder_start (see the layout in
// liveness.go): e.start, with the mark of the file it moved to, if it
// moved.
func (e *Engine) holderStart() string {
	if s := e.movedStart.Load(); s != nil {
		return *s
	}
	return e.start
}
