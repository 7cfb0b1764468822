package lease

import "context"

// ReleaseIdle releases now every row this process keeps between writes
// (Options.Linger) while no write of this process holds its lane, as the
// linger would later, and settles each lane as Close would (a grant a
// claim that gave up may have left); its statements run on ctx's Loan
// (Lend) while the engine's own connection is not open. The driver calls
// it when the application's last connection closes, on that connection:
// a process that wrote once then closes its pool leaves Close nothing to
// write, and never opens the engine's connection. Errors are handled as
// the linger's are (logged; a row left is released by Close or taken over).
func (e *Engine) ReleaseIdle(ctx context.Context) {
	if e.opts.MemoryOnly {
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	lanes := make([]*laneState, 0, len(e.lanes))
	for _, l := range e.lanes {
		lanes = append(lanes, l)
	}
	e.mu.Unlock()
	for _, l := range lanes {
		l.releaseIdle(ctx)
	}
}

// releaseIdle is ReleaseIdle for one lane: it takes the gate (or, if a
// writer of this process has it, does nothing), hands the row on or
// releases it, and settles the lane unless a claim or a settle runs.
func (l *laneState) releaseIdle(ctx context.Context) {
	if !l.tryEnter() {
		return
	}
	l.mu.Lock()
	g, closing := l.held.row, l.closing
	l.mu.Unlock()
	if g != nil && !closing && !g.lost.Load() {
		l.handOffOn(ctx, g, "released as the last connection closed")
	}
	l.mu.Lock()
	claiming, settling := l.claimSlot.busyLocked(), l.settler.running
	begun, late := l.claimSlot.begun, !l.claimSlot.nothingLateLocked(l.e.locks != nil)
	l.mu.Unlock()
	if late && !closing && !claiming && !settling {
		l.releaseLateOn(ctx, "released as the last connection closed")
		l.mu.Lock()
		if l.held.row == nil {
			l.settledAt = begun
		}
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.gate.passLocked() // to the next writer, if one came meanwhile
	l.mu.Unlock()
}
