package lease

import (
	"database/sql/driver"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// grant is this process's ownership of a lane's active row.
type grant struct {
	id, epoch int64
	at        time.Time // when this process got the row (slice accounting)
	lost      atomic.Bool
	// given is set by handOff just before it commits releasing or handing
	// over the row (cleared if that fails): a heartbeat racing with it then
	// finds the row gone, and must not call the grant lost.
	given atomic.Bool
	// why says how the grant ended once lost is set (the reason of the
	// *Error wrapping ErrLost); the first reason recorded wins.
	why atomic.Pointer[string]
	// beatAt is when this process last wrote the row's heartbeat_at
	// (UnixNano; 0: only the grant wrote it, at about at).
	beatAt atomic.Int64
	// fenceArgs caches the fencing check's arguments (Hold.fenceArgs).
	fenceArgs atomic.Pointer[[]driver.NamedValue]
}

// laneState is one (scope, lane) of an Engine. Its fields, by kind (the
// per-claim state is a claimRun, claim.go):
type laneState struct {
	// Identity, set once.
	e           *Engine
	scope, lane string
	want        int64 // start of the lane's want region (see wantBits)

	// mu guards every field below except epochs (atomic) and the inbox's
	// looks (atomic).
	mu sync.Mutex

	gate gate // the in-process FIFO gate (gate.go)

	// The row this process holds, and its linger watcher (linger.go).
	row       *grant // nil: this process does not hold the row
	depth     int    // nesting of the current hold
	idleSince time.Time
	closing   bool
	watcher   lingerWatcher // hands the idle row on or releases it (linger.go)
	turn      turn          // what keeps the lane within the slice (turn.go)

	claimSlot claimSlot // the claim in progress, as the lane sees it (claimslot.go)

	inbox inbox // other processes' waiters' registrations (inbox.go)

	// What this process remembers of the lane's epochs (epochs.go).
	epochs epochMemory
}

func newLane(e *Engine, scope, lane string) *laneState {
	return &laneState{e: e, scope: scope, lane: lane, want: wantBase(scope, lane), watcher: newLingerWatcher(), turn: turn{grace: returnGrace}}
}

// beatDue reports whether the row's heartbeat_at, written when the grant
// was made and at each heartbeat since, is at least every old: a grant
// younger than the heartbeat period needs no heartbeat write.
func (g *grant) beatDue(now time.Time, every time.Duration) bool {
	last := g.at
	if n := g.beatAt.Load(); n != 0 {
		last = time.Unix(0, n)
	}
	return now.Sub(last) >= every
}

func (l *laneState) setRow(g *grant) {
	if g != nil {
		l.epochs.note(g.epoch)
	}
	l.mu.Lock()
	l.row = g
	l.claimSlot.settledLocked()
	if g != nil {
		l.inbox.passedTo = ""
	}
	l.mu.Unlock()
}

func (l *laneState) currentRow() *grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.row
}

func (l *laneState) markLost(g *grant, why string) {
	g.why.CompareAndSwap(nil, &why)
	l.epochs.note(g.epoch)
	if g.lost.CompareAndSwap(false, true) {
		l.e.stats.Lost.Add(1)
		l.e.logf(slog.LevelWarn, "cleolease: lease lost", "scope", l.scope, "lane", l.lane, "epoch", g.epoch, "reason", *g.why.Load())
	}
	l.mu.Lock()
	if l.row == g {
		l.row = nil
	}
	l.mu.Unlock()
	l.forwardPending("") // another process has the lane: its waiters look
}

func (l *laneState) me() holder {
	var slot int64
	if l.e.locks != nil {
		slot = l.e.locks.Slot()
	}
	return holder{ID: l.e.holderID, PID: l.e.pid, Start: l.e.start, Slot: slot}
}
