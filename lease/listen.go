package lease

import "log/slog"

// An engine opened with Options.TablesReady starts listening late: a
// process that only reads never needs the doorbell's socket, its file
// watch or the heartbeat goroutine, and a short process pays for each
// (a socket, an inotify instance whose close waits in the kernel, a
// goroutine and its ticker). They start at the engine's first lease use
// (Acquire, Break) or once a reader has checked the file's identity
// unwatched lateStatsBeforeListen times (checkFile), whichever comes
// first. Every other engine listens from Open, as before.
//
// Nothing names this process to others before it listens: rows, queue
// entries and registrations are written by Acquire and Break, after
// listen. Its liveness lock is held from Open (openStore), so crash
// detection does not wait for the first lease.

// lateStatsBeforeListen is how many unwatched identity checks (stats) a
// late-listening engine makes before it starts its file watch: a reader
// that lives that long has its further checks answered by the watch.
const lateStatsBeforeListen = 16

// listen starts the doorbell, its file watch and the heartbeat goroutine
// (once; nothing after Close). late is true when Open left them to the
// first use (Options.TablesReady): the heartbeat goroutine is then asked
// to look at the liveness files at once (kickFollow), since they may have
// moved unwatched since Open. Not here: followSidecar may record a new
// nonce, a statement whose identity check (statUnwatched) would call
// listen again under listenMu.
func (e *Engine) listen(late bool) {
	if e.listening.Load() || e.bell == nil {
		return
	}
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	if e.listening.Load() {
		return
	}
	e.mu.Lock()
	closed := e.closed
	if !closed {
		e.wg.Add(1) // the heartbeat goroutine's, before Close can wait
	}
	e.mu.Unlock()
	if closed {
		return
	}
	e.bell.listen()
	if err := e.bell.p().bellErr; err != nil {
		// Waiters of this process poll, and other processes cannot ask
		// it for the lane: slower hand-offs, and restored rows naming it
		// wait for its heartbeat.
		e.logf(slog.LevelWarn, "cleolease: no doorbell for this process on the file; it polls", "err", err)
	}
	if sw := e.sidecarWatch(); sw != nil && e.proof != nil && e.proof.path != "" {
		sw.Follow(e.proof.path) // its removal: followNonce
	}
	e.listening.Store(true)
	go e.heartbeatLoop()
	if late {
		e.kickFollow()
	}
}

// listenLate is listen for an engine that Open left unlistening.
func (e *Engine) listenLate() {
	if !e.listening.Load() {
		e.listen(true)
	}
}

// statUnwatched counts an identity check that found no file watch, and
// starts listening at the lateStatsBeforeListen'th (see listen).
func (e *Engine) statUnwatched() {
	if e.listening.Load() {
		return
	}
	if e.lateStats.Add(1) >= lateStatsBeforeListen {
		e.listen(true)
	}
}
