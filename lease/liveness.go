package lease

import (
	"strconv"
	"strings"
	"sync"

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
//     identity recorded in holder_start (holderStart) decide: a missing
//     pid, or a pid whose start time differs (reused), is dead.
//  3. A row with no holder_start (the original implementation's rows) falls
//     back to whether the pid exists.
//
// The OS answers three ways (platform.ProcState): a process it hides or
// refuses access to (another user's on FreeBSD with see_other_uids=0, in
// another jail, another account's or a protected one on Windows) is
// neither alive nor dead, and so is a running pid whose start time cannot
// be compared. Such a holder is unknown: its lane is not reclaimed at
// once, only once its heartbeat is older than its TTL (reclaimDecision),
// so that a live holder is not robbed and a dead one does not block the
// lane for ever.
//
// holderStart is the layout of holder_start, "/"-separated:
// boot/pidns/starttime/mark/uid, where mark names the holder's liveness
// lock file (platform.Liveness.Mark, possibly empty) and uid its effective
// user id (platform.UID), which tells a BSD peer whether the kernel would
// show it the holder. Rows of earlier versions end after the mark (or
// after the start time); every part from the mark on is optional. The uid
// lives in this existing nullable column rather than a new one because
// holder_start already travels with every holder and waiter (lease rows,
// queue rows, the registration datagram), and a new column would need an
// ALTER TABLE on every existing file.

// holder is what a row says about a holder or waiter.
type holder struct {
	ID    string
	PID   int64
	Start string // "" when the row has none
	Slot  int64  // 0 when the row has none
}

// verdict is a liveness judgement and the evidence behind it.
type verdict struct {
	state  platform.ProcState
	reason string
	// elsewhere: alive by its pid, but its liveness lock is not in the
	// liveness files this process sees, which the holder recorded it
	// used another of (its mark): the liveness files were replaced and it
	// has not followed yet, or it runs on another file — the original of
	// a copy opened here, or the file as it was before a restore replaced
	// it (reclaimable asks its doorbell).
	elsewhere bool
	// otherPidNS: unknown because the holder runs in another pid
	// namespace and its liveness lock could not be tested.
	otherPidNS bool
}

// alive reports whether the holder is provably alive.
func (v verdict) alive() bool { return v.state == platform.ProcAlive }

// dead reports whether the holder is provably gone.
func (v verdict) dead() bool { return v.state == platform.ProcDead }

func aliveBecause(why string) verdict   { return verdict{state: platform.ProcAlive, reason: why} }
func deadBecause(why string) verdict    { return verdict{state: platform.ProcDead, reason: why} }
func unknownBecause(why string) verdict { return verdict{state: platform.ProcUnknown, reason: why} }

// procIdentity returns this process's holder_start prefix
// ("boot/pidns/starttime"); the engine appends its locks' mark and its uid
// (holderStart). Read once: none of the three changes while the process
// runs, and reading them costs an engine's open several file reads.
var procIdentity = sync.OnceValue(platform.Identity)

// bootID is this process's boot as holder_start records it.
func bootID() string { return platform.BootID() }

// pidNamespace is this process's pid namespace as holder_start records it
// (platform.PIDNamespace); tests replace it to judge rows as a process of
// another namespace would.
var pidNamespace = platform.PIDNamespace

// slotFor maps a holder id to its liveness slot (platform.SlotFor).
func slotFor(holderID string) int64 { return platform.SlotFor(holderID) }

// ticketOffset is where the arrival counter lives in its file.
const ticketOffset = platform.TicketOffset

// lookupProcess asks the OS whether a pid runs (platform.LookupProcess);
// tests replace it to inject the OS's answers.
var lookupProcess = platform.LookupProcess

// probe judges whether h is alive, strongest evidence first.
func (e *Engine) probe(h holder) verdict {
	v := probeHolder(e.holderID, e.locks, h, e.opts.RemoteHolders)
	if v.otherPidNS && e.os.holes.unknownIsDead {
		return deadBecause("liveness lock released (other pid namespace)") // the seeded hole (holes)
	}
	return v
}

// probeHolder is probe for a process whose own holder id is self, seeing
// the liveness locks locks (nil when there are none). With remote (a
// database on a network filesystem, opted in), a holder that may run on
// another host — its row names another boot, or names none — is taken for
// alive: nothing this host can test proves it dead.
func probeHolder(self string, locks platform.Liveness, h holder, remote bool) verdict {
	if h.ID == self {
		return aliveBecause("this process")
	}
	parts := strings.Split(h.Start, "/")
	if remote && (h.Start == "" || parts[0] != platform.BootID()) {
		return aliveBecause("holder from another boot or host: never judged dead on local evidence (network filesystem)")
	}
	mark, uid := "", ""
	if len(parts) >= 4 {
		mark = parts[3]
	}
	if len(parts) >= 5 {
		uid = parts[4]
	}
	elsewhere := false
	if h.Slot > 0 && locks != nil {
		// The holder recorded which lock file it locked (the mark): if it
		// is the one we see, a missing lock proves the process is gone.
		switch locks.Probe(h.Slot, mark) {
		case platform.Held:
			return aliveBecause("liveness lock held")
		case platform.Released:
			return deadBecause("liveness lock released")
		}
		elsewhere = mark != "" && mark != locks.Mark()
	}
	if h.PID <= 0 || h.PID > platform.MaxPID {
		return deadBecause("no such pid " + strconv.FormatInt(h.PID, 10))
	}
	pid := strconv.FormatInt(h.PID, 10)
	if h.Start != "" {
		if len(parts) < 3 {
			return deadBecause("unreadable holder_start")
		}
		if parts[0] != platform.BootID() {
			return deadBecause("holder from another boot")
		}
		if parts[1] != pidNamespace() {
			// Its pid means nothing here, and its liveness lock could not
			// be tested (another sidecar file, or none): a process in
			// another pid namespace (a container sharing the volume) may
			// well be alive. Cannot tell is never dead: the TTL rule
			// decides (reclaimDecision).
			v := unknownBecause("holder in another pid namespace (pid " + strconv.FormatInt(h.PID, 10) + " means nothing here) and its liveness lock cannot be tested from here")
			v.otherPidNS = true
			return v
		}
	}
	state, st := lookupProcess(h.PID, uid)
	switch {
	case state == platform.ProcDead:
		return deadBecause("pid " + pid + " exited")
	case state == platform.ProcUnknown:
		return unknownBecause("pid " + pid + ": the OS does not say whether it runs (hidden from this process, or access denied)")
	case h.Start == "":
		return aliveBecause("pid " + pid + " exists")
	case st == "" || st == "?" || parts[2] == "?":
		return unknownBecause("pid " + pid + " runs, but its start time cannot be compared: it may have been reused")
	case st != parts[2]:
		return deadBecause("pid " + pid + " reused by another process")
	}
	if elsewhere {
		return verdict{state: platform.ProcAlive, reason: "pid " + pid + " running, its liveness lock in other liveness files than this process's", elsewhere: true}
	}
	return aliveBecause("pid " + pid + " running (no liveness lock)")
}
