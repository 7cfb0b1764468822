package lease

import (
	"slices"
	"testing"
	"time"
)

// The lane's parts, each alone (lane.go lists them).

func TestGatePassesInArrivalOrder(t *testing.T) {
	var g gate
	if !g.freeLocked() {
		t.Fatal("a new gate is not free")
	}
	g.takeLocked()
	w1, w2 := g.joinLocked(), g.joinLocked()
	if g.freeLocked() || !g.queuedLocked() {
		t.Fatal("an owned gate with waiters reads free or unqueued")
	}
	if !g.passLocked() || !gatePassed(w1) || gatePassed(w2) {
		t.Fatal("the first pass did not go to the first waiter alone")
	}
	if !g.passLocked() || !gatePassed(w2) {
		t.Fatal("the second pass did not go to the second waiter")
	}
	if g.passLocked() || !g.freeLocked() {
		t.Fatal("passing with nobody queued did not free the gate")
	}
}

func TestGateWaiterThatQuits(t *testing.T) {
	var g gate
	g.takeLocked()
	early, late := g.joinLocked(), g.joinLocked()
	if g.quitLocked(late) {
		t.Fatal("a waiter that quit before its turn was told it owns the gate")
	}
	g.passLocked()
	if !g.quitLocked(early) {
		t.Fatal("a waiter granted as it quit was not told it owns the gate")
	}
	if g.queuedLocked() || !g.ownedLocked() {
		t.Fatal("after both quit, the gate is not owned by the granted one alone")
	}
}

func gatePassed(w *gateWaiter) bool {
	select {
	case <-w.ch:
		return w.granted
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
