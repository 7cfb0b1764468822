package lease

import (
	"database/sql/driver"
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
	// handing is set while a hand-off of this grant runs (handOff): a
	// second one — Close's, racing the linger watcher's — returns at once
	// instead of finding the row handed on and calling the grant lost.
	handing atomic.Bool
	// why says how the grant ended once lost is set (the reason of the
	// *Error wrapping ErrLost); the first reason recorded wins.
	why atomic.Pointer[string]
	// beatAt is when this process last wrote the row's heartbeat_at
	// (UnixNano; 0: only the grant wrote it, at about at).
	beatAt atomic.Int64
	// fenceArgs caches the fencing check's arguments (Hold.fenceArgs).
	fenceArgs atomic.Pointer[[]driver.NamedValue]
	// inline is set while the grant is an inline claim not settled yet
	// (inline.go): written inside the caller's open transaction, seen by
	// nobody else, and not the lane's held row.
	inline atomic.Bool
	// gatherBy is when the hand-off of an inline grant that others wanted
	// at its COMMIT stops waiting for their registrations (UnixNano; 0:
	// none, see inlineGather).
	gatherBy atomic.Int64
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

// heldRow is this process's hold on a lane's active row: the grant (nil
// when this process does not hold the row), how deeply the current Hold
// nests, since when no Hold has been active, and the turn that decides
// how long the lane stays here while another process waits (turn.go).
// Its fields are guarded by the lane's mu: Acquire's fast path
// (enterHeld) takes the gate only while the row is held, under that one
// lock.
type heldRow struct {
	row       *grant    // nil: this process does not hold the row
	depth     int       // nesting of the current Hold (0: none active)
	idleSince time.Time // when the last Hold ended and the gate fell free
	turn      turn
}

// setLocked records g (nil: none) as the row this process holds.
func (h *heldRow) setLocked(g *grant) { h.row = g }

// dropLocked records that grant g ended, unless the row held is already
// another grant.
func (h *heldRow) dropLocked(g *grant) {
	if h.row == g {
		h.row = nil
	}
}

// beginLocked records a first acquisition starting its Hold.
func (h *heldRow) beginLocked() { h.depth = 1 }

// nestLocked and unnestLocked count a re-entrant Hold in and out.
func (h *heldRow) nestLocked() { h.depth++ }

func (h *heldRow) unnestLocked() { h.depth-- }

// endLocked records the first acquisition's Hold ending and returns the
// row held.
func (h *heldRow) endLocked() *grant {
	h.depth = 0
	return h.row
}

// idleLocked records that no Hold is active from now on.
func (h *heldRow) idleLocked(now time.Time) { h.idleSince = now }

// idleForLocked is how long, at now, no Hold has been active.
func (h *heldRow) idleForLocked(now time.Time) time.Duration { return now.Sub(h.idleSince) }
