package lease

import (
	"slices"
	"testing"
	"time"
)

// The lane's parts, each alone (lane.go lists them).

// A FIFO gate (Options.Slice 0) hands itself to its queued writers in
// arrival order, and a newcomer queues behind them.
func TestGatePassesInArrivalOrder(t *testing.T) {
	g := gate{fifo: true}
	if !g.freeLocked() || !g.openLocked() {
		t.Fatal("a new gate is not free")
	}
	t0 := time.Unix(0, 0)
	g.takeLocked()
	w1, w2 := g.joinLocked(t0), g.joinLocked(t0)
	if g.freeLocked() || !g.queuedLocked() || g.openLocked() {
		t.Fatal("an owned gate with waiters reads free, open or unqueued")
	}
	if !g.passLocked() || !gatePassed(w1) || gateWoken(w2) || g.openLocked() {
		t.Fatal("the first pass did not go to the first waiter alone, or left the gate open")
	}
	if !g.arriveLocked(w1, t0) {
		t.Fatal("the writer handed the gate does not own it")
	}
	if !g.passLocked() || !gatePassed(w2) {
		t.Fatal("the second pass did not go to the second waiter")
	}
	if g.passLocked() || !g.freeLocked() {
		t.Fatal("passing with nobody queued did not free the gate")
	}
}

// In normal mode a leave wakes the first queued writer only, and leaves
// the gate unowned: a newcomer (the writer that just left, coming back)
// may take it first; the woken writer that lost goes back to the front of
// the queue, and the next leave wakes it again, not the writer behind it.
func TestGateLetsANewcomerBargeAheadOfTheWokenWaiter(t *testing.T) {
	var g gate
	t0 := time.Unix(0, 0)
	g.takeLocked()
	w1, w2 := g.joinLocked(t0), g.joinLocked(t0)
	if !g.passLocked() || !gateWoken(w1) || gateWoken(w2) || g.ownedLocked() {
		t.Fatal("the leave did not wake the first waiter alone, with the gate unowned")
	}
	if !g.openLocked() || g.freeLocked() {
		t.Fatal("in normal mode the gate is not open to a newcomer while its waiter runs, or reads free")
	}
	g.takeLocked() // the newcomer
	if g.arriveLocked(w1, t0.Add(starveAfter/2)) {
		t.Fatal("the woken waiter took a gate a newcomer owns")
	}
	if g.starving {
		t.Fatal("a waiter that waited under starveAfter turned the gate to starvation mode")
	}
	if !g.passLocked() || !gateWoken(w1) || gateWoken(w2) {
		t.Fatal("the next leave did not wake the waiter that lost, first in line again")
	}
	if g.passLocked() != true || gateWoken(w2) {
		t.Fatal("a second leave while a woken waiter has yet to run woke another (a herd)")
	}
	if !g.arriveLocked(w1, t0.Add(starveAfter/2)) || !g.ownedLocked() {
		t.Fatal("the woken waiter did not take the unowned gate")
	}
}

// A woken writer that loses the gate after waiting starveAfter turns the
// gate to starvation mode: newcomers queue, leaves hand the gate to the
// queue in order; the mode ends when the writer handed the gate is the
// last one queued or waited less than starveAfter.
func TestGateTurnsToStarvationMode(t *testing.T) {
	var g gate
	t0 := time.Unix(0, 0)
	g.takeLocked()
	w1 := g.joinLocked(t0)
	g.passLocked()
	g.takeLocked() // a newcomer barges
	if g.arriveLocked(w1, t0.Add(starveAfter)) || !g.starving {
		t.Fatal("a waiter that lost after starveAfter did not turn the gate to starvation mode")
	}
	w2 := g.joinLocked(t0.Add(starveAfter))
	if !g.passLocked() || !gatePassed(w1) || g.openLocked() {
		t.Fatal("in starvation mode the leave did not hand the gate to the first waiter, closed to newcomers")
	}
	if !g.arriveLocked(w1, t0.Add(2*starveAfter)) || !g.starving {
		t.Fatal("starvation mode ended while a waiter queues and the one handed the gate waited starveAfter")
	}
	w3 := g.joinLocked(t0.Add(2 * starveAfter))
	if !g.passLocked() || !gatePassed(w2) || gateWoken(w3) {
		t.Fatal("the second hand-over did not go to the second waiter")
	}
	if !g.arriveLocked(w2, t0.Add(starveAfter+starveAfter/2)) || g.starving {
		t.Fatal("starvation mode did not end when the writer handed the gate waited under starveAfter")
	}
	if !g.passLocked() || !gateWoken(w3) || gatePassed(w3) || g.ownedLocked() {
		t.Fatal("back in normal mode, the leave did not wake the waiter, with the gate unowned")
	}
}

// A writer that gives up: queued, it leaves the queue; handed the gate, or
// woken while the gate is unowned, it must leave the gate (pass it on);
// woken while a newcomer owns it, it just goes, and the owner's leave
// wakes the next.
func TestGateWaiterThatQuits(t *testing.T) {
	g := gate{fifo: true}
	t0 := time.Unix(0, 0)
	g.takeLocked()
	early, late := g.joinLocked(t0), g.joinLocked(t0)
	if g.quitLocked(late) {
		t.Fatal("a waiter that quit before its turn was told to leave the gate")
	}
	g.passLocked()
	if !g.quitLocked(early) {
		t.Fatal("a waiter handed the gate as it quit was not told to leave it")
	}
	if g.queuedLocked() || !g.ownedLocked() {
		t.Fatal("after both quit, the gate is not owned by the one handed it alone")
	}

	var n gate
	n.takeLocked()
	a, b := n.joinLocked(t0), n.joinLocked(t0)
	n.passLocked()
	if !n.quitLocked(a) || !n.ownedLocked() {
		t.Fatal("a waiter woken to an unowned gate as it quit was not told to leave it")
	}
	if !n.passLocked() || !gateWoken(b) {
		t.Fatal("its leave did not wake the next waiter")
	}
	n.takeLocked() // a newcomer
	if n.quitLocked(b) {
		t.Fatal("a waiter woken to a gate a newcomer owns was told to leave it")
	}
	if n.passLocked() || !n.freeLocked() {
		t.Fatal("the newcomer's leave, nobody queued, did not free the gate")
	}
}

func gatePassed(w *gateWaiter) bool { return gateWoken(w) && w.granted }

func gateWoken(w *gateWaiter) bool {
	select {
	case <-w.ch:
		return true
	default:
		return false
	}
}

func TestInboxKeepsTheNewestRegistration(t *testing.T) {
	var b inbox
	b.addLocked(registration{ID: "b", Arrival: 5})
	b.addLocked(registration{ID: "a", Arrival: 1})
	b.addLocked(registration{ID: "b", Arrival: 3}) // a forwarded, older one
	regs := b.takeLocked()
	if got := regIDs(regs); !slices.Equal(got, []string{"a", "b"}) || regs[1].Arrival != 5 {
		t.Fatalf("took %v (b's arrival %d), want a then b at arrival 5", got, regs[1].Arrival)
	}
	if !b.emptyLocked() {
		t.Fatal("the inbox kept registrations it handed out")
	}
	b.addLocked(registration{ID: "b", Arrival: 9}) // arrived while they were out
	b.restoreLocked(regs)
	regs = b.takeLocked()
	if got := regIDs(regs); !slices.Equal(got, []string{"a", "b"}) || regs[1].Arrival != 9 {
		t.Fatalf("after restore took %v (b's arrival %d), want a then b at arrival 9", got, regs[1].Arrival)
	}
}

func regIDs(regs []registration) []string {
	out := make([]string, len(regs))
	for i, r := range regs {
		out[i] = r.ID
	}
	return out
}

func TestEpochMemoryNeverGoesBack(t *testing.T) {
	var m epochMemory
	m.note(40)
	m.note(7)
	if got := m.next(); got != 41 {
		t.Fatalf("next after noting 40 and 7 is %d, want 41", got)
	}
	past := time.UnixMicro(10)
	if got := m.floor(past); got != 42 {
		t.Fatalf("floor with the clock behind the memory is %d, want 42", got)
	}
	now := time.UnixMicro(1_000_000)
	if got := m.floor(now); got != 1_000_000 {
		t.Fatalf("floor with the clock ahead is %d, want the clock, 1000000", got)
	}
}

func TestHeldRowDropsOnlyItsGrant(t *testing.T) {
	var h heldRow
	old, cur := &grant{epoch: 1}, &grant{epoch: 2}
	h.setLocked(cur)
	h.dropLocked(old)
	if h.row != cur {
		t.Fatal("ending an earlier grant dropped the current one")
	}
	h.beginLocked()
	h.nestLocked()
	h.unnestLocked()
	if got := h.endLocked(); got != cur || h.depth != 0 {
		t.Fatalf("endLocked returned %v at depth %d, want the row at depth 0", got, h.depth)
	}
	h.dropLocked(cur)
	if h.row != nil {
		t.Fatal("ending the current grant left it held")
	}
}

func TestLingerWatcherStartsOnceThenWakes(t *testing.T) {
	w := newLingerWatcher()
	if !w.neededLocked() || !w.startLocked() {
		t.Fatal("a watcher that does not run was not started")
	}
	if w.neededLocked() {
		t.Fatal("a running watcher nobody asked for is woken at each leave")
	}
	w.askLocked()
	if !w.neededLocked() || w.neededLocked() {
		t.Fatal("a watcher's request to be woken was not answered exactly once")
	}
	if w.startLocked() {
		t.Fatal("a running watcher was started again")
	}
	select {
	case <-w.kick:
	default:
		t.Fatal("a running watcher was not woken")
	}
	w.stoppedLocked()
	if !w.startLocked() {
		t.Fatal("a stopped watcher was not started again")
	}
}

func TestClaimSlotForgetsAGrantItDidNotGet(t *testing.T) {
	var s claimSlot
	if s.grantArrivedLocked() {
		t.Fatal("a grant datagram was taken for a claim when none runs")
	}
	s.beginLocked()
	if !s.grantArrivedLocked() || !s.incoming {
		t.Fatal("a grant datagram for the running claim was not recorded")
	}
	s.endLocked(false, false)
	if s.running || s.incoming {
		t.Fatal("a claim that ended without a grant left the datagram recorded")
	}
	s.beginLocked()
	s.grantArrivedLocked()
	s.endLocked(false, true)
	if s.running || !s.incoming {
		t.Fatal("a claim that quit while the lane settles forgot its datagram before the settle judged it")
	}
	s.settledLocked()
	s.beginLocked()
	s.grantArrivedLocked()
	s.endLocked(true, false)
	if !s.incoming || !s.busyLocked() {
		t.Fatal("a granted claim forgot its datagram, or left the lane to a settle, before the row was set")
	}
	if !s.grantArrivedLocked() {
		t.Fatal("a grant datagram for a claim that has its grant was taken for an orphan")
	}
	s.recordedLocked()
	if s.incoming || s.busyLocked() {
		t.Fatal("the row set left the claim's grant pending")
	}
}
