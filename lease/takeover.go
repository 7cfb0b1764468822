package lease

// Epochs across a change of writer host. A lane's row travels with the
// file: to a LiteFS replica promoted to primary, or through a reboot. The
// copy that arrives may miss the last grants made before the change (LiteFS
// replicates asynchronously; synchronous=NORMAL in WAL mode may lose the
// last commits at a power loss), so its row's epoch + 1 may repeat an
// epoch already handed out, and used outside the database. A grant that
// takes a lane over from such a row therefore takes the clock floor
// (epochMemory.floor) too, as a recreated row does.

import (
	"strings"

	"github.com/cleocode/cleolease/internal/platform"
)

// takeoverFloor is the lowest epoch a grant that rewrites prev (nil: the
// lane has no active row) may carry, or 0 when it simply counts on from
// the lane's highest epoch:
//
//   - a hand-off, where this process rewrites its own row for a waiter,
//     counts on: the row was written by a live holder of this host, after
//     every earlier grant on this copy of the file;
//   - on a replicated file (Options.Replicated), every other grant — a
//     claim of a free lane, a reclaim, a grant to the queue's head over a
//     dead holder's row — takes the floor: after a failover the first
//     grant of every lane on the new primary is one of these, whatever
//     the row it finds says (a former primary's, or this host's own from
//     before, with all the former primary's later grants lost);
//   - elsewhere, a grant over an active row written during another boot
//     (another host's, or this host's before a restart) takes the floor;
//     a released row of another boot is floored in the statement itself
//     (grantTo), which reads it there.
//
// The floor exceeds every epoch a former writer issued when the clock
// reading it is not behind that writer's clock by more than the time
// between its last grant and this one (see epochMemory.floor).
func (l *laneState) takeoverFloor(prev *row) int64 {
	if prev != nil && prev.h.ID == l.e.holderID {
		return 0
	}
	if l.e.opts.Replicated || (prev != nil && otherBoot(prev.h.Start)) {
		return l.epochs.floor(l.e.clock.Now())
	}
	return 0
}

// otherBoot reports whether holder_start names another boot than this
// host's current one (a row without holder_start names none).
func otherBoot(start string) bool {
	if start == "" {
		return false
	}
	boot, _, _ := strings.Cut(start, "/")
	return boot != platform.BootID()
}

// bootPrefix is how holder_start begins for a holder of this boot.
func bootPrefix() string { return platform.BootID() + "/" }
