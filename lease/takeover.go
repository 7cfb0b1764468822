package lease

// Epochs across a change of the file's history. A lane's row travels with
// the file: to a LiteFS replica promoted to primary, through a reboot,
// through a backup restored over it or a copy opened beside it. The copy
// that arrives may miss the last grants made before the change, so its
// row's epoch + 1 may repeat an epoch already handed out, and used outside
// the database. Every grant but a hand-off therefore takes the clock floor
// (epochMemory.floor), as a recreated row does.

import "github.com/cleocode/cleolease/internal/platform"

// takeoverFloor is the lowest epoch a grant may carry, or 0 when it
// simply counts on from the lane's highest epoch:
//
//   - a hand-off (handOff: this process rewrites its own current row, the
//     grant it holds, for a waiter; Fencing.Pass likewise) counts on: the
//     row was written by this live holder, on this very file, after every
//     earlier grant of it;
//   - every other grant — a claim of a free lane, the reuse of a released
//     row, a reclaim, a grant to the queue's head over a dead holder's
//     row, a takeover of a row that names this process but that this
//     engine was not handed (claimRun.handedToUs) — takes the floor,
//     whatever the row it finds says. The row may have come back with the
//     file: a restore (Litestream, sqlite3 .backup or .restore, the backup
//     API, VACUUM INTO, a copy over the file) brings back old rows and old
//     epochs, a LiteFS replica promoted after a failover may miss the
//     former primary's last grants, a power loss may drop the last
//     commits. Its epoch + 1 may then repeat an epoch already handed out,
//     and used outside the database; the floor exceeds them all.
//
// The floor exceeds every epoch issued before when the clock reading it is
// not behind the clock that issued them by more than the time between that
// grant and this one (see epochMemory.floor).
func (l *laneState) takeoverFloor(handOff bool) int64 {
	if handOff {
		return 0
	}
	return l.epochs.floor(l.e.clock.Now())
}

// bootPrefix is how holder_start begins for a holder of this boot.
func bootPrefix() string { return platform.BootID() + "/" }
