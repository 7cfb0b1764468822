package lease

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// The simulation's liveness checks (issue 28): safety alone let a lane
// stay with a live process that did not know it held it. After every
// step the checker also asks four questions. Simulated time passes only
// during the scheduler's sleeps, and each check counts a sleep from the
// state the last check saw, unless an excuse applies then (simExcuse).
//
// Stuck lane. The lane is stuck while some live process wants it (its
// worker is inside Acquire, or between an Acquire that failed and the
// next) and no live process holds it, where a process holds the lane
// when its engine has a grant (heldRow) that matches the lane's active
// row (holder and epoch) and is not known lost — inside a Hold or
// lingering after one: a lingering holder's watcher hands the row on once
// it sees a waiter (a holder that does not see them is the starvation
// check's business). A row that names a process whose engine does not
// hold it (a grant its claim never learned of), a row of a dead process,
// or no row at all, is not held. The stuck time restarts when a live
// process holds the lane, and stands while nobody wants it. A sleep does
// not count while
//   - every process that wants the lane is stopped (nobody could take it);
//   - the active row names a stopped process: a stopped holder, or a
//     stopped waiter the lane was handed to, legitimately blocks the lane
//     until it resumes, its TTL passes under StealAfterTTL, or a Break;
//   - SQLite's write lock is held when the sleep begins: at a sleep no
//     process that is not stopped has a step to take, so a stopped one
//     holds it (parked inside a transaction), and every writer waits; or
//     a stopped process holds the file's write turn (taken just before
//     BEGIN IMMEDIATE, dropped when the transaction ends), which every
//     writer of every lane waits for likewise;
//   - the active row names a dead holder whose liveness no waiter can
//     tell (its lock is in a sidecar generation the waiters do not see,
//     and its pid is in another pid namespace), until its heartbeat is
//     older than its TTL by the clock of some waiter that is not stopped
//     (the TTL rule).
// It is a violation when the stuck time passes simStuckBound, chosen from
// the protocol's own periods: a waiter looks at least every fallbackPoll
// (5 ms), or registeredPoll (50 ms) while the holder has its registration;
// it writes its own queue row after selfEnqueueAfter (100 ms); a grant
// its waiter gave up settles within the settle's back-off (at most
// registeredPoll); a lane whose holder the OS cannot judge is taken once
// the holder's heartbeat is older than simTTL (300 ms) by the waiter's
// clock, which the scheduler steps by up to ±2·simTTL at a time; an
// Acquire gives up at its wait bound (3·simTTL) and comes back. Two
// seconds covers each with room; a lane stuck for good passes it in a
// few hundred sleeps.
//
// Unaware holder. The row must not name, for more than simUnawareBound, a
// live process whose engine neither holds the lane (as above) nor claims
// it (its worker does not want it): a grant written for a waiter that
// was giving up, which nothing settled (issue 28 item 1). Sleeps do not
// count while that process is stopped or SQLite's write lock is held
// (the settle waits for it). It needs no waiter to be seen.
//
// Starvation. A process that waits inside Acquire (not stopped, not
// excused as above) for more than simStarveBound, while the other
// processes begin at least simStarveHolds holds, is starved: a holder
// that does not see it (its want byte and queue row in a sidecar the
// holder does not look at) keeps the lane through its own fast path for
// ever. Slice is 0 in the simulation (strict FIFO): a holder hands the
// lane on at the end of a hold when it sees a waiter; a waiter whose
// registration was lost writes its queue row after selfEnqueueAfter, one
// whose row was dropped (its probe answered Unknown once) comes back
// after its wait bound. The wait restarts when the process gets a Hold or
// gives up.
//
// Robbery. A lane must never be reclaimed as "dead" from a process that
// lives (a stopped one lives): every reclaim an engine logs is checked
// against the simulated world when it happens. A reclaim of an Unknown
// holder once its TTL passed, or under StealAfterTTL, is not a robbery.

// simStuckBound is how long (simulated time, excused windows left out) a
// lane may stay stuck before the checker reports it (see above): the
// engine's promise, IdleBound.
const simStuckBound = IdleBound

// simUnawareBound is how long (simulated time, while it is not stopped)
// the lane's row may name a live process that does not know it holds the
// lane (see above).
const simUnawareBound = IdleBound

// simStarveBound is how long (simulated time, excused windows left out)
// a process may wait inside Acquire while others hold the lane (see
// above): ten times selfEnqueueAfter, more than its wait bound
// (3·simTTL), after which it comes back with a new registration.
const simStarveBound = time.Second

// simStarveHolds is how many holds other processes must begin during a
// wait that passes simStarveBound for the checker to call it starvation
// (with fewer, it is the stuck-lane check's business).
const simStarveHolds = 3

// The kinds of liveness violation, as each violation's text begins.
const (
	simStuck   = "stuck lane"
	simUnaware = "unaware holder"
	simStarved = "starved"
	simRobbed  = "robbed"
)

// simStarve is one process's current wait, for the starvation check.
type simStarve struct {
	step     int           // the step its wait began
	waited   time.Duration // simulated time it waited, inside Acquire, not stopped and not excused
	call     time.Duration // the part of waited in its current Acquire call
	holds    int           // holds other processes began since, while it was inside Acquire and not stopped
	last     *simProc      // the process that began the last of them
	reported bool
}

// simLive is the state of the stuck-lane and unaware-holder checks.
type simLive struct {
	stuck    time.Duration // stuck time counted so far
	since    int           // the step at which the lane became stuck (-1: it is not)
	reported bool
	// unaware is how long the row has named a live process unaware of
	// it (see the unaware-holder check), since the step unawareSince.
	unaware         time.Duration
	unawareSince    int
	unawareReported bool
	cur             simLaneState // the lane as the last check saw it
}

// simLaneState is what the last check saw of the lane.
type simLaneState struct {
	known      bool   // the check could read the lane (not busy)
	wanted     bool   // a live process wants the lane
	allStopped bool   // and every process that wants it is stopped
	held       bool   // a live process holds it (see above)
	excuse     string // why a wait is legitimate now ("": it is not)
	row        string // the active row, for the report
	waiters    string // who wants it, for the report
	// unaware: the row names a live process that neither holds it nor
	// claims it; unawareStopped: that process is stopped.
	unaware, unawareStopped bool
}

// stuck reports whether the lane is stuck, excused or not.
func (s simLaneState) stuck() bool { return s.known && s.wanted && !s.held }

// simRow is the lane's active row as the checker reads it.
type simRow struct {
	holder    string
	epoch     int64
	heartbeat int64 // heartbeat_at, ms since the Unix epoch
	ttl       int64 // ttl_ms
	start     string
}

// laneState evaluates the liveness checks' view of the lane, whose
// active row is r (nil: none).
func (w *simWorld) laneState(r *simRow) simLaneState {
	o := w.os
	o.mu.Lock()
	procs := append([]*simProc(nil), o.procs...)
	var waiters []*simProc
	s := simLaneState{known: true, row: "none"}
	runnable := 0
	for _, p := range procs {
		if p != nil && !p.dead && (p.wanting || p.helpWanting > 0) {
			waiters = append(waiters, p)
			if !p.paused {
				runnable++
			}
		}
	}
	var holder *simProc
	if r != nil {
		holder = o.everyone[r.holder]
		s.row = fmt.Sprintf("%s at epoch %d", r.holder, r.epoch)
	}
	holderStopped := holder != nil && !holder.dead && holder.paused
	holderDead := holder == nil || holder.dead
	holderWants := holder != nil && (holder.wanting || holder.helpWanting > 0)
	o.mu.Unlock()
	s.wanted = len(waiters) > 0
	var names []string
	for _, p := range waiters {
		names = append(names, fmt.Sprintf("p%d", p.idx))
	}
	s.waiters = strings.Join(names, ",")
	if r != nil && holder != nil && !holderDead {
		if l := holder.engine().knownLane("s", "l"); l != nil {
			if g := l.currentRow(); g != nil && !g.lost.Load() && g.epoch == r.epoch {
				s.held = true
			}
		}
	}
	// A holder whose engine does not listen (opened with TablesReady,
	// no lease used since) holds no grant, and refuses a waiter's
	// registration, which then reclaims the row (reclaimable): the row
	// waits for a waiter, and the stuck-lane check sees that it is served.
	listens := holder != nil && !holderDead && holder.engine().listening.Load()
	s.unaware = r != nil && !holderDead && !s.held && !holderWants && listens
	s.unawareStopped = s.unaware && holderStopped
	s.allStopped = s.wanted && runnable == 0
	switch {
	case !s.wanted:
	case holderStopped:
		s.excuse = "the row's holder is stopped"
	case r != nil && holderDead && w.unknowable(r, waiters):
		s.excuse = "the row's dead holder waits for the TTL rule"
	}
	return s
}

// unknowable reports whether the dead holder of r is one no waiter of
// waiters that is not stopped can judge but by the TTL rule, and its
// TTL has not passed by any of their clocks.
func (w *simWorld) unknowable(r *simRow, waiters []*simProc) bool {
	parts := strings.Split(r.start, "/")
	if len(parts) < 4 || parts[1] == platform.PIDNamespace() {
		return false // its pid tells
	}
	gen, ok := parseSimMark(parts[3])
	if !ok {
		return false
	}
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	for _, p := range waiters {
		if p.paused {
			continue
		}
		if slices.Contains(p.gens, gen) || p.clock.Now().UnixMilli()-r.heartbeat > r.ttl {
			return false
		}
	}
	return true
}

// writeLocked reports whether a connection holds SQLite's write lock on
// the file (the checker's BEGIN IMMEDIATE is refused), between steps.
func (w *simWorld) writeLocked() bool {
	ctx := context.Background()
	c, err := w.checkDB.Conn(ctx)
	if err != nil {
		return false
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return isBusy(err)
	}
	c.ExecContext(ctx, "ROLLBACK")
	return false
}

// simExcuse is why a sleep about to begin does not count: towards a
// stuck lane and the waits inside Acquire (lane), and towards an unaware
// holder (unaware); "": it counts.
type simExcuse struct{ lane, unaware string }

// sleepExcuse is why the sleep about to begin does not count: the last
// check's excuse, every waiter stopped, the unaware holder stopped, or
// SQLite's write lock held (by a stopped process: at a sleep no other
// process has a step to take), which every writer, and the settle of a
// grant made too late, waits for.
func (w *simWorld) sleepExcuse() simExcuse {
	s := w.stall.cur
	locked := sync.OnceValue(w.writeLocked)
	const lock = "a stopped process holds the write lock"
	// The file's write turn (writeturn.go) is taken just before BEGIN
	// IMMEDIATE and dropped when the transaction ends: a process stopped
	// while it holds the turn holds up every writer of every lane, as one
	// stopped inside its transaction does.
	const turn = "a stopped process holds the write turn"
	var ex simExcuse
	switch {
	case !s.wanted:
	case s.excuse != "":
		ex.lane = s.excuse
	case s.allStopped:
		ex.lane = "every waiter stopped"
	case locked():
		ex.lane = lock
	case w.os.turnStopped():
		ex.lane = turn
	}
	switch {
	case !s.unaware:
	case s.unawareStopped:
		ex.unaware = "the unaware holder is stopped"
	case locked():
		ex.unaware = lock
	case w.os.turnStopped():
		ex.unaware = turn
	}
	return ex
}

// slept counts a sleep of d, begun with excuse, towards a stuck lane, an
// unaware holder and the waits of the processes inside Acquire.
func (w *simWorld) slept(d time.Duration, ex simExcuse) {
	s := w.stall.cur
	if s.stuck() && ex.lane == "" {
		w.stall.stuck += d
	}
	if s.known && s.unaware && ex.unaware == "" {
		w.stall.unaware += d
	}
	if !s.known || ex.lane != "" {
		return
	}
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	for _, p := range w.os.procs {
		if p != nil && !p.dead && p.cancel != nil && !p.paused {
			p.starve.waited += d
			p.starve.call += d
		}
	}
}

// checkLive runs the stuck-lane and unaware-holder checks after step,
// given the lane's active row r (nil: none).
func (w *simWorld) checkLive(step int, r *simRow) {
	if !w.cfg.liveness {
		return
	}
	s := w.laneState(r)
	prev := w.stall.cur
	w.stall.cur = s
	switch {
	case s.unaware && !prev.unaware:
		w.fault("unaware holder")
		w.res.trace = append(w.res.trace, "unaware holder: the row is "+s.row+", wanted by "+s.waiters)
		w.stall.unaware, w.stall.unawareSince, w.stall.unawareReported = 0, step, false
	case !s.unaware && prev.unaware:
		w.res.trace = append(w.res.trace, fmt.Sprintf("unaware holder no more: the row is %s after %v", s.row, w.stall.unaware))
	}
	if s.unaware && w.stall.unaware > simUnawareBound && !w.stall.unawareReported {
		w.stall.unawareReported = true
		w.res.violate(step, "%s: the row has named %s, alive and neither holding nor claiming the lane, for %v of simulated time since step %d",
			simUnaware, s.row, w.stall.unaware, w.stall.unawareSince)
	}
	w.checkStarved(step)
	if s.held {
		w.stall.stuck, w.stall.since, w.stall.reported = 0, -1, false
		return
	}
	if !s.stuck() {
		return // nobody wants it now: the time stuck so far stands
	}
	if w.stall.since < 0 {
		w.stall.since = step
	}
	if w.stall.stuck > simStuckBound && !w.stall.reported {
		w.stall.reported = true
		w.res.violate(step, "%s: wanted by %s and held by no process for %v of simulated time since step %d (row: %s; write turn: %s)",
			simStuck, s.waiters, w.stall.stuck, w.stall.since, s.row, w.os.turnHolders())
	}
}

// unknownState is the checks' view when the lane could not be read (a
// busy file): no time counts until the next check reads it.
func (w *simWorld) unknownState() { w.stall.cur.known = false }

// acquired records that p's Acquire returned a Hold (ok) or failed, for
// the starvation check: every other process that waits, and is not
// stopped, saw one more hold go to another.
func (w *simWorld) acquired(p *simProc, ok bool) {
	o := w.os
	o.mu.Lock()
	defer o.mu.Unlock()
	p.cancel = nil
	if !ok {
		return
	}
	p.wanting, p.holding = false, true
	if p.starve.waited > simStarveBound/8 {
		w.note(fmt.Sprintf("%v waited %v (since step %d; %d holds of others)", p, p.starve.waited, p.starve.step, p.starve.holds))
	}
	p.starve = simStarve{}
	w.othersSawAHoldLocked(p)
}

// othersSawAHoldLocked counts a hold p began (by any of its writers) for
// the starvation check of every other process that waits and is not
// stopped. The caller holds w.os.mu.
func (w *simWorld) othersSawAHoldLocked(p *simProc) {
	for _, q := range w.os.procs {
		if q != nil && q != p && !q.dead && q.cancel != nil && !q.paused {
			q.starve.holds++
			q.starve.last = p
		}
	}
}

// helping records a change of the number of p's extra writers (help)
// inside Acquire (wanting) and holding the lane (holding); a writer that
// begins to hold counts as a hold of p for the others' starvation check.
func (w *simWorld) helping(p *simProc, wanting, holding int) {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	p.helpWanting += wanting
	p.helpHolding += holding
	if holding > 0 {
		w.othersSawAHoldLocked(p)
	}
}

// checkStarved runs the starvation check after step.
func (w *simWorld) checkStarved(step int) {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	for _, q := range w.os.procs {
		if q == nil || q.dead || !q.wanting || q.starve.reported {
			continue
		}
		if q.starve.waited > simStarveBound && q.starve.holds >= simStarveHolds {
			q.starve.reported = true
			w.res.violate(step, "%s: %v (sidecar generation %d) has waited %v of simulated time since step %d, while other processes began %d holds, the last by %v (generation %d)",
				simStarved, q, q.sidecar, q.starve.waited, q.starve.step, q.starve.holds, q.starve.last, q.starve.last.sidecar)
		}
	}
}

// wants records that p's worker begins to want the lane (it calls
// Acquire), with cancel to end the call.
func (w *simWorld) wants(p *simProc, cancel context.CancelFunc) {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	if !p.wanting {
		p.starve = simStarve{step: w.curStep}
	}
	p.starve.call = 0
	p.wanting, p.cancel = true, cancel
}

// givesUp records that p's worker no longer wants the lane (it gave up
// and does other work for a while).
func (w *simWorld) givesUp(p *simProc) {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	p.wanting = false
}

// released records that p's Hold ended.
func (w *simWorld) released(p *simProc) {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	p.holding = false
}

// simReclaim is a reclaim an engine logged: reclaimer took the lane from
// holder from for reason ("dead", "unknown", "ttl"); alive says whether
// from lived in the simulated world at that moment.
type simReclaim struct {
	by, from, reason string
	alive            bool
	held             bool // from's current engine held a grant of the lane (then)
}

// simLogHandler receives a simulated engine's log records at warning
// level and above, and passes its reclaims to the robbery check.
type simLogHandler struct {
	w *simWorld
	p *simProc
}

func (h simLogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h simLogHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h simLogHandler) WithGroup(string) slog.Handler                { return h }

func (h simLogHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "cleolease: lease reclaimed" {
		return nil
	}
	rc := simReclaim{by: h.p.id}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "from":
			rc.from = a.Value.String()
		case "reason":
			rc.reason = a.Value.String()
		}
		return true
	})
	o := h.w.os
	o.mu.Lock()
	q := o.everyone[rc.from]
	rc.alive = q != nil && !q.dead
	o.mu.Unlock()
	if rc.alive {
		// A live process is robbed only of a grant its engine holds: a
		// row no engine of it holds (one its closed engine left, or a
		// restore brought back) is not its lease.
		if l := q.engine().knownLane("s", "l"); l != nil {
			g := l.currentRow()
			rc.held = g != nil && !g.lost.Load()
		}
	}
	h.w.mu.Lock()
	h.w.reclaims = append(h.w.reclaims, rc)
	h.w.mu.Unlock()
	return nil
}

// checkRobbed reports the reclaims of the last step that took a lane
// from a live process as dead.
func (w *simWorld) checkRobbed(step int) {
	w.mu.Lock()
	rcs := w.reclaims
	w.reclaims = nil
	w.mu.Unlock()
	for _, rc := range rcs {
		w.res.trace = append(w.res.trace, fmt.Sprintf("reclaim by %s from %s: %s (alive: %v, its engine holds a grant: %v)", rc.by, rc.from, rc.reason, rc.alive, rc.held))
		if rc.reason == "dead" && rc.alive && rc.held && w.cfg.liveness {
			w.res.violate(step, "%s: %s reclaimed the lane as dead from %s, which lives", simRobbed, rc.by, rc.from)
		}
	}
}

// simFindsBug runs the simulation configured by cfg for seeds 0 to
// seeds-1, steps each, until a run reports a violation of one of kinds
// (of any kind when none is given), and fails if none does: the test of a
// seeded revert (sim_bug_test.go),
// which the simulation must find. Violations of other kinds are logged.
// (A seed may not replay exactly, see TestSimulationDeterministic: several
// seeds keep the test from resting on one interleaving.)
func simFindsBug(t *testing.T, bug string, cfg func(seed int64, steps int) simConfig, seeds, steps int, kinds ...string) {
	t.Helper()
	start := time.Now()
	for seed := range int64(seeds) {
		res := runSim(t, cfg(seed, steps))
		for _, v := range res.violations {
			if len(kinds) == 0 { // any violation
				t.Logf("seed %d found %s in %v: %s", seed, bug, time.Since(start).Round(time.Millisecond), v)
				return
			}
			for _, k := range kinds {
				if strings.Contains(v, ": "+k+": ") {
					t.Logf("seed %d found %s in %v: %s", seed, bug, time.Since(start).Round(time.Millisecond), v)
					t.Logf("the trace up to it:\n%s", res.traceTail(simViolationStep(v), simTraceLines(t)))
					return
				}
			}
			t.Logf("seed %d: %s", seed, v)
		}
		t.Logf("seed %d: no %s in %d steps (%d commits, %v simulated)", seed, strings.Join(kinds, " or "), steps, res.commits, res.simTime.Round(time.Millisecond))
	}
	t.Fatalf("the simulation missed %s in %d seeds of %d steps (%v)", bug, seeds, steps, time.Since(start).Round(time.Millisecond))
}

// simViolationStep is the step a violation's text names (-1: none).
func simViolationStep(v string) int {
	var n int
	if _, err := fmt.Sscanf(v, "step %d:", &n); err != nil {
		return -1
	}
	return n
}
