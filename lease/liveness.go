package lease

import (
	"strconv"
	"strings"

	"github.com/cleocode/cleolease/internal/platform"
)

// Liveness evidence, strongest first:
//
//  1. Every engine holds a lock for its whole life at its slot (the row's
//     holder_slot, derived from its holder id) in files of its own beside
//     the database (platform.Locks: OFD locks on the sidecar on Linux,
//     flock on per-process files in the portable tier, LockFileEx on
//     Windows). The kernel drops it when the process dies, however it
//     dies; a peer tests it without disturbing it. The locks are never
//     taken on the database file itself.
//  2. When the lock is absent (the files were deleted or replaced, or the
//     row was written by another implementation), the pid plus the process
//     identity recorded in holder_start ("boot/pidns/starttime/mark")
//     decide: a missing pid, or a pid whose start time differs (reused),
//     is dead.
//  3. A row with no holder_start (the original implementation's rows) falls
//     back to whether the pid exists.

// holder is what a row says about a holder or waiter.
type holder struct {
	ID    string
	PID   int64
	Start string // "" when the row has none
	Slot  int64  // 0 when the row has none
}

// verdict is a liveness judgement and the evidence behind it.
type verdict struct {
	alive  bool
	reason string
}

// procIdentity returns this process's holder_start prefix
// ("boot/pidns/starttime"); the engine appends its locks' mark.
func procIdentity() string { return platform.Identity() }

// bootID and pidNamespace are this process's boot and pid namespace as
// holder_start records them.
func bootID() string { return platform.BootID() }

func pidNamespace(string) string { return platform.PIDNamespace() }

// slotFor maps a holder id to its liveness slot (platform.SlotFor).
func slotFor(holderID string) int64 { return platform.SlotFor(holderID) }

// ticketOffset is where the arrival counter lives in its file.
const ticketOffset = platform.TicketOffset

// probe judges whether h is alive, strongest evidence first.
func (e *Engine) probe(h holder) verdict {
	return probeHolder(e.holderID, e.locks, h, e.opts.RemoteHolders)
}

// probeHolder is probe for a process whose own holder id is self, seeing
// the liveness locks locks (nil when there are none). With remote (a
// database on a network filesystem, opted in), a holder that may run on
// another host — its row names another boot, or names none — is taken for
// alive: nothing this host can test proves it dead.
func probeHolder(self string, locks platform.Liveness, h holder, remote bool) verdict {
	if h.ID == self {
		return verdict{true, "this process"}
	}
	parts := strings.Split(h.Start, "/")
	if remote && (h.Start == "" || parts[0] != platform.BootID()) {
		return verdict{true, "holder from another boot or host: never judged dead on local evidence (network filesystem)"}
	}
	if h.Slot > 0 && locks != nil {
		// The holder recorded which lock file it locked (the mark): if it
		// is the one we see, a missing lock proves the process is gone.
		mark := ""
		if len(parts) == 4 {
			mark = parts[3]
		}
		switch locks.Probe(h.Slot, mark) {
		case platform.Held:
			return verdict{true, "liveness lock held"}
		case platform.Released:
			return verdict{false, "liveness lock released"}
		}
	}
	if h.PID <= 0 || h.PID > platform.MaxPID {
		return verdict{false, "no such pid " + strconv.FormatInt(h.PID, 10)}
	}
	pid := strconv.FormatInt(h.PID, 10)
	if h.Start != "" {
		if len(parts) < 3 {
			return verdict{false, "unreadable holder_start"}
		}
		if parts[0] != platform.BootID() {
			return verdict{false, "holder from another boot"}
		}
		if parts[1] != platform.PIDNamespace() {
			// Its pid means nothing here and its lock is gone.
			return verdict{false, "liveness lock released (other pid namespace)"}
		}
		st := platform.StartTime(h.PID)
		switch {
		case st == "":
			return verdict{false, "pid " + pid + " exited"}
		case st != parts[2]:
			return verdict{false, "pid " + pid + " reused by another process"}
		}
		return verdict{true, "pid " + pid + " running (no liveness lock)"}
	}
	if !platform.Exists(h.PID) {
		return verdict{false, "pid " + pid + " exited"}
	}
	return verdict{true, "pid " + pid + " exists"}
}
