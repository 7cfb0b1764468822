package platform

import (
	"errors"
	"testing"
)

// fakeGen is a generation whose answers a test sets: the file it stands
// for, who holds a lifetime lock or a want there, whether its path still
// names it.
type fakeGen struct {
	mark   string
	slot   int64
	held   map[int64]bool    // slots whose lifetime lock is held in this file
	wants  map[[2]int64]bool // (base, slot) wants held in this file
	gone   bool              // the path no longer names this file
	ticket int64             // the arrival counter
	path   bool              // byPath
	closed bool
	setErr error            // what SetWant(base, true) returns
	calls  map[string]int   // method calls, by name
	errs   map[string]error // injected errors, by method name
	seenBy func(int64, string) bool
	kind   int          // the kind this process announces in this file, plus one
	kinds  map[int]bool // the kinds other processes announce in this file
}

func newFakeGen(mark string, slot int64) *fakeGen {
	return &fakeGen{mark: mark, slot: slot, held: map[int64]bool{slot: true}, wants: map[[2]int64]bool{}, calls: map[string]int{}, errs: map[string]error{}, kinds: map[int]bool{}}
}

func (g *fakeGen) Slot() int64       { return g.slot }
func (g *fakeGen) Mark() string      { return g.mark }
func (g *fakeGen) WatchPath() string { return "sidecar-" + g.mark }
func (g *fakeGen) Close() error      { g.closed = true; return nil }
func (g *fakeGen) Probe(slot int64, mark string) Proof {
	g.calls["Probe"]++
	switch {
	case g.held[slot]:
		return Held
	case mark == g.mark:
		return Released
	}
	return Unknown
}
func (g *fakeGen) SetWant(base int64, on bool) error {
	g.calls["SetWant"]++
	if on && g.setErr != nil {
		return g.setErr
	}
	if on {
		g.wants[[2]int64{base, g.slot}] = true
	} else {
		delete(g.wants, [2]int64{base, g.slot})
	}
	return nil
}
func (g *fakeGen) Wants(base, slot int64) (bool, error) {
	g.calls["Wants"]++
	return g.wants[[2]int64{base, slot}], g.errs["Wants"]
}
func (g *fakeGen) AnyWants(base int64) (bool, error) {
	n, err := g.CountWants(base, 1)
	return n > 0, err
}
func (g *fakeGen) CountWants(base int64, limit int) (int, error) {
	g.calls["CountWants"]++
	n := 0
	for k := range g.wants {
		if k[0] == base && k[1] != g.slot && n < limit {
			n++
		}
	}
	return n, nil
}
func (g *fakeGen) Announce(kind int) error {
	g.calls["Announce"]++
	if err := g.errs["Announce"]; err != nil {
		return err
	}
	g.kind = kind + 1
	return nil
}
func (g *fakeGen) Announced(kind int) (bool, error) {
	g.calls["Announced"]++
	return g.kinds[kind], g.errs["Announced"]
}
func (g *fakeGen) NextTicket() int64       { g.ticket++; return g.ticket }
func (g *fakeGen) current() (bool, error)  { return !g.gone, g.errs["current"] }
func (g *fakeGen) byPath() bool            { return g.path }
func (g *fakeGen) lastTicket() int64       { return g.ticket }
func (g *fakeGen) raiseTicket(floor int64) { g.ticket = max(g.ticket, floor) }
func (g *fakeGen) sees(slot int64, mark string) bool {
	if g.seenBy != nil {
		return g.seenBy(slot, mark)
	}
	return mark == g.mark
}

// followOver returns Locks over first whose next generations are the
// given ones, in order.
func followOver(first *fakeGen, next ...*fakeGen) *followLocks {
	return follow(first, func() (generation, error) {
		if len(next) == 0 {
			return nil, errors.New("no file")
		}
		g := next[0]
		next = next[1:]
		return g, nil
	})
}

// A process moves only when the path names another file; then it tests in
// both files, announces its wants in the new one too, takes tickets and
// its mark from the new one, and keeps the old one open.
func TestFollowMovesWhenReplaced(t *testing.T) {
	const base, me, peer, late = 1 << 47, 1 << 21, 1 << 22, 1 << 23
	old, nu := newFakeGen("100", me), newFakeGen("200", me)
	old.ticket = 41
	f := followOver(old, nu)
	if err := f.SetWant(base, true); err != nil {
		t.Fatal(err)
	}
	if moved, err := f.Refresh(); moved || err != nil {
		t.Fatalf("Refresh with the path naming the same file: moved %v, %v", moved, err)
	}
	old.errs["current"] = errors.New("stat failed")
	if moved, err := f.Refresh(); moved || err == nil {
		t.Fatalf("Refresh when the check fails: moved %v, %v; want no move and the error", moved, err)
	}
	old.errs["current"] = nil

	// A waiter that opened after the removal holds its want in the new
	// file only: unseen before the move.
	nu.wants[[2]int64{base, late}] = true
	nu.held[late] = true
	if w, _ := f.AnyWants(base); w {
		t.Fatal("a want in a file not yet followed was seen")
	}
	if f.Sees(late, "200") || !f.Sees(peer, "100") {
		t.Fatal("Sees before the move: want the old file's mark only")
	}
	old.gone = true
	if moved, err := f.Refresh(); !moved || err != nil {
		t.Fatalf("Refresh after the sidecar was replaced: moved %v, %v", moved, err)
	}
	if f.Mark() != "200" || f.WatchPath() != "sidecar-200" {
		t.Fatalf("mark %q after the move; want the new file's", f.Mark())
	}
	if !nu.wants[[2]int64{base, me}] || !old.wants[[2]int64{base, me}] {
		t.Fatal("the want announced before the move is not in both files")
	}
	if w, err := f.AnyWants(base); !w || err != nil {
		t.Fatalf("AnyWants after the move: %v, %v; want the late waiter seen", w, err)
	}
	if w, _ := f.Wants(base, late); !w {
		t.Fatal("Wants after the move: the late waiter not seen")
	}
	if !f.Sees(late, "200") || !f.Sees(peer, "100") {
		t.Fatal("Sees after the move: want both files' marks")
	}
	if got := f.NextTicket(); got != 42 {
		t.Fatalf("first ticket from the new file: %d; want 42, after the old file's 41", got)
	}
	if old.closed {
		t.Fatal("the old file was closed: peers that have not moved would find this process gone")
	}
	// A dropped want leaves every file.
	if err := f.SetWant(base, false); err != nil {
		t.Fatal(err)
	}
	if nu.wants[[2]int64{base, me}] || old.wants[[2]int64{base, me}] {
		t.Fatal("a dropped want stayed in a file")
	}
	// A want announced after the move goes to the new file.
	f.SetWant(base+1, true)
	if !nu.wants[[2]int64{base + 1, me}] || old.wants[[2]int64{base + 1, me}] {
		t.Fatal("a want announced after the move is not in the new file alone")
	}
	f.Close()
	if !old.closed || !nu.closed {
		t.Fatal("Close left a file open")
	}
	if moved, _ := f.Refresh(); moved {
		t.Fatal("Refresh after Close moved")
	}
}

// Probe is Held when any file shows the holder's lifetime lock, Released
// only when the file whose mark the holder recorded shows it released,
// Unknown otherwise.
func TestFollowProbe(t *testing.T) {
	const me, holder = 1 << 21, 1 << 22
	old, nu := newFakeGen("100", me), newFakeGen("200", me)
	f := followOver(old, nu)
	old.gone = true
	f.Refresh()
	for _, c := range []struct {
		name         string
		inOld, inNew bool
		mark         string
		want         Proof
	}{
		{"not moved, alive", true, false, "100", Held},
		{"moved, alive, recorded the old file", true, true, "100", Held},
		{"opened after the removal, alive", false, true, "200", Held},
		{"not moved, dead", false, false, "100", Released},
		{"moved, dead, recorded the new file", false, false, "200", Released},
		{"dead, recorded a file this process never saw", false, false, "300", Unknown},
		{"alive in a file this process never saw", false, false, "", Unknown},
	} {
		old.held[holder], nu.held[holder] = c.inOld, c.inNew
		if got := f.Probe(holder, c.mark); got != c.want {
			t.Errorf("%s: Probe = %v; want %v", c.name, got, c.want)
		}
	}
}

// In the portable tier every generation finds its files by path: only the
// newest is asked.
func TestFollowByPathAsksNewest(t *testing.T) {
	const base, me = 1 << 47, 1 << 21
	old, nu := newFakeGen("f1", me), newFakeGen("f2", me)
	old.path, nu.path = true, true
	f := followOver(old, nu)
	old.gone = true
	f.Refresh()
	old.calls, nu.calls = map[string]int{}, map[string]int{}
	f.AnyWants(base)
	f.Probe(1<<22, "f9")
	f.Wants(base, 1<<22)
	f.Announced(1)
	if len(old.calls) != 0 || nu.calls["CountWants"] != 1 || nu.calls["Probe"] != 1 || nu.calls["Wants"] != 1 || nu.calls["Announced"] != 1 {
		t.Fatalf("calls: old %v, new %v; want the newest only", old.calls, nu.calls)
	}
}

// A failed opening of the new file keeps the process where it was; a
// later Refresh moves. A cleaner that removes the sidecar over and over
// costs at most maxGenerations open files.
func TestFollowFailureAndBound(t *testing.T) {
	const me = 1 << 21
	first := newFakeGen("0", me)
	var opened []*fakeGen
	fail := true
	f := follow(first, func() (generation, error) {
		if fail {
			return nil, errors.New("EMFILE")
		}
		g := newFakeGen(string(rune('a'+len(opened))), me)
		opened = append(opened, g)
		return g, nil
	})
	first.gone = true
	if moved, err := f.Refresh(); moved || err == nil || f.Mark() != "0" {
		t.Fatalf("Refresh whose new file failed: moved %v, %v, mark %q", moved, err, f.Mark())
	}
	fail = false
	for i := 0; i < maxGenerations+3; i++ {
		if moved, err := f.Refresh(); !moved || err != nil {
			t.Fatalf("move %d: %v, %v", i, moved, err)
		}
		opened[len(opened)-1].gone = true
	}
	gens := *f.gens.Load()
	if len(gens) != maxGenerations {
		t.Fatalf("%d files kept; want at most %d", len(gens), maxGenerations)
	}
	if !first.closed || !opened[2].closed || opened[3].closed {
		t.Fatal("not the oldest files closed")
	}
}

// The kind of SQLite file lock this process announces (Announcer) follows
// the files: announced in the newest file, announced again in each file
// moved to, put back on a later Refresh when that failed; Announced asks
// every file and refuses this process's own kind.
func TestFollowAnnounce(t *testing.T) {
	const me, kind, late, notMoved = 1 << 21, 2, 1, 4
	old, nu := newFakeGen("100", me), newFakeGen("200", me)
	f := followOver(old, nu)
	if err := f.Announce(kind); err != nil || old.kind != kind+1 {
		t.Fatalf("Announce: %v, kind in the file %d", err, old.kind-1)
	}
	if err := f.Announce(kind + 1); !errors.Is(err, errKind) {
		t.Fatalf("a second kind: %v; want errKind", err)
	}
	if err := f.Announce(MaxKinds); !errors.Is(err, errKind) {
		t.Fatalf("a kind out of range: %v; want errKind", err)
	}
	if _, err := f.Announced(kind); !errors.Is(err, ErrOwnKind) {
		t.Fatalf("Announced of its own kind: %v; want ErrOwnKind", err)
	}
	// A process that opened after the removal announces in the new file
	// only: unseen before the move.
	nu.kinds[late] = true
	old.kinds[notMoved] = true
	if a, err := f.Announced(late); a || err != nil {
		t.Fatalf("a kind in a file not yet followed: %v, %v; want unseen", a, err)
	}
	// Refresh with the path naming the same file announces again: a no-op
	// for the file, which puts back an announcement it lost.
	old.kind = 0
	if moved, err := f.Refresh(); moved || err != nil || old.kind != kind+1 {
		t.Fatalf("Refresh in place: moved %v, %v, kind %d; want the announcement put back", moved, err, old.kind-1)
	}
	old.gone = true
	nu.errs["Announce"] = errors.New("EIO")
	if moved, err := f.Refresh(); !moved || err != nil {
		t.Fatalf("Refresh after the sidecar was replaced: moved %v, %v", moved, err)
	}
	if nu.kind != 0 {
		t.Fatal("an announcement that failed is recorded")
	}
	if _, err := f.Refresh(); err == nil {
		t.Fatal("Refresh while the announcement keeps failing: no error")
	}
	delete(nu.errs, "Announce")
	if moved, err := f.Refresh(); moved || err != nil || nu.kind != kind+1 {
		t.Fatalf("Refresh once the file takes it: moved %v, %v, kind %d; want it announced in the new file", moved, err, nu.kind-1)
	}
	if old.kind != kind+1 {
		t.Fatal("the old file lost the announcement its peers that have not moved look for")
	}
	for _, k := range []int{late, notMoved} {
		if a, err := f.Announced(k); !a || err != nil {
			t.Fatalf("Announced(%d) after the move: %v, %v; want seen in either file", k, a, err)
		}
	}
	old.errs["Announced"] = errors.New("EIO")
	if a, err := f.Announced(late); !a || err != nil {
		t.Fatalf("Announced with one file failing and the other showing it: %v, %v", a, err)
	}
	if a, err := f.Announced(0); a || err == nil {
		t.Fatalf("Announced with one file failing and none showing it: %v, %v; want the error", a, err)
	}
}
