package platform

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// The liveness files are ours, kept beside the database (or in a sidecar
// directory), where a temporary-file cleaner or a user's rm may remove
// them while processes use them. A process that opens the database after
// that creates a new sidecar and locks it: a process that stayed on the
// removed file tests wants and lifetime locks in a file nobody else opens
// any more, and skips every newcomer's want and registration as "not
// waiting" (issue 28 item 2: a holder that is never idle for its Linger
// then never hands the lane off). So each process follows its files:
// Locks is a chain of generations, one per file (or lock directory) the
// process has locked, and Refresh, which the engine calls when the file
// watch reports the sidecar's unlink, when a registration names a file
// this process does not see, and on every heartbeat, moves the process to
// the file the path names now.
//
// A process that moved keeps its earlier files open, with its lifetime
// lock, for the rest of its life: a peer that has not moved yet probes the
// old file, and a lifetime lock released there under the mark its holder
// recorded would read as "gone" — a live holder robbed. Every test
// (Probe, Wants, AnyWants, CountWants) asks every file this process has
// locked, so a process sees both the peers that have moved and those that
// have not: Probe is Held when any file shows the lock, and Released only
// from the file whose mark the holder recorded (the only one whose
// generation answers Released). Wants are announced, tickets taken and
// the mark recorded in the newest file; a want announced before the move
// stays in the old file too, where peers that have not moved look. So does
// the kind of SQLite file lock the process announced (Announcer): Refresh
// announces it in the new file too, and on every call puts it back in the
// newest one if it was lost there (the portable tier's kind file removed
// alone); Announced asks every file.
//
// On Windows the sidecar cannot be removed while a process has it open
// (Go's os.OpenFile shares it without FILE_SHARE_DELETE, so DeleteFile and
// MoveFileEx fail with a sharing violation): Refresh finds the same file
// every time there.

// Follower is implemented by the Locks that OpenLocks returns: Locks that
// follow the liveness files when they are removed or replaced. Tests and
// simulations that give the engine Locks of their own need not implement
// it (the engine then never moves).
type Follower interface {
	// Refresh checks that the liveness files' path still names the file
	// this process took its lifetime lock in. When it does not (removed,
	// renamed, replaced), it opens the file the path names now, creating
	// it, takes the lifetime lock there, announces there the wants and the
	// kind (Announcer) this process holds, raises its arrival counter to
	// the old one's, and from then on announces wants, takes tickets and
	// reports Mark from the new file, keeping the old ones open and locked
	// until Close. moved reports such a move. When the path still names
	// the file, the kind's announcement is put back there if it was lost
	// (a no-op otherwise). An error means that the check, the new file or
	// the announcement failed: the process stays where it was, and the
	// next Refresh tries again.
	Refresh() (moved bool, err error)
	// Sees reports whether the process whose lifetime lock is at slot,
	// recorded as mark (Mark), keeps it in a file this process sees: one
	// of the files this process has locked, or, in the portable tier, the
	// lifetime file its path names now. A registration from a process this
	// process does not see tells it to Refresh.
	Sees(slot int64, mark string) bool
}

// generation is one opening of the liveness files: a sidecar file (byte
// tier) or a lock directory (portable tier), with this process's
// lifetime lock in it.
type generation interface {
	Locks
	Announcer
	// current reports whether the path still names the file (the lifetime
	// file) this generation locked; an error when that cannot be told.
	current() (bool, error)
	// byPath reports whether this generation's tests find their files by
	// path (the portable tier), so that every generation sees the same
	// files and only the newest need be asked; false when they test
	// through the generation's own open file (the byte tier).
	byPath() bool
	// sees is Follower.Sees for this generation.
	sees(slot int64, mark string) bool
	// lastTicket reads the arrival counter (0 when it cannot);
	// raiseTicket sets it to at least floor.
	lastTicket() int64
	raiseTicket(floor int64)
}

// maxGenerations bounds the files a process keeps open: a cleaner that
// removes the sidecar over and over must not exhaust its descriptors. The
// oldest is closed beyond it (its lifetime lock drops: a peer that has
// not moved for maxGenerations removals might then judge this process
// gone, from that file only; see followLocks.Refresh).
const maxGenerations = 16

// followLocks is the Locks OpenLocks returns: the generations this process
// has locked, oldest first, the newest current. Tests read gens without a
// lock (an immutable slice, replaced whole); Refresh, SetWant and Close
// take mu.
type followLocks struct {
	open   func() (generation, error) // opens the files the path names now
	byPath bool                       // the generations' tests go by path (generation.byPath)

	gens atomic.Pointer[[]generation]

	mu     sync.Mutex
	wants  map[int64]bool // the lanes (want bases) this process announces
	kind   int            // the kind this process announces, plus one (0: none)
	closed bool
}

// openFollowing opens the liveness files the path names now with open
// (nil, nil when the directory does not allow them) and follows them from
// there (follow). G is a tier's generation type: a nil one that open
// returns must not become a non-nil generation.
func openFollowing[G interface {
	comparable
	generation
}](open func() (G, error)) (Locks, error) {
	gen := func() (generation, error) {
		g, err := open()
		if g == *new(G) {
			return nil, err
		}
		return g, err
	}
	g, err := gen()
	if g == nil || err != nil {
		return nil, err
	}
	return follow(g, gen), nil
}

// follow returns Locks over the first generation g, opening later ones
// with open.
func follow(g generation, open func() (generation, error)) *followLocks {
	f := &followLocks{open: open, byPath: g.byPath(), wants: map[int64]bool{}}
	f.gens.Store(&[]generation{g})
	return f
}

// errNoFiles reports a Refresh that found the directory refusing the new
// liveness files.
var errNoFiles = errors.New("the liveness files cannot be created any more")

func (f *followLocks) Refresh() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false, nil
	}
	gens := *f.gens.Load()
	cur := gens[len(gens)-1]
	same, err := cur.current()
	if err != nil {
		return false, err
	}
	if same {
		if f.kind != 0 {
			// A no-op while the announcement is where it was put; it puts
			// back one that was lost (a kind file removed alone) or that a
			// move could not make.
			return false, cur.Announce(f.kind - 1)
		}
		return false, nil
	}
	g, err := f.open()
	if err == nil && g == nil {
		err = errNoFiles
	}
	if err != nil {
		return false, err
	}
	g.raiseTicket(cur.lastTicket())
	for base := range f.wants {
		// Best effort: the old file keeps the want for the peers that
		// look there, and the claim's next lockWant does not retry a
		// want it holds. A shared lock on a new file fails only under a
		// Windows peer's test, and no sidecar moves there.
		g.SetWant(base, true)
	}
	if f.kind != 0 {
		// Best effort too: the next Refresh tries again (see above).
		g.Announce(f.kind - 1)
	}
	next := append(slices.Clone(gens), g)
	if len(next) > maxGenerations {
		next[0].Close()
		next = next[1:]
	}
	f.gens.Store(&next)
	return true, nil
}

func (f *followLocks) Sees(slot int64, mark string) bool {
	for _, g := range f.asked() {
		if g.sees(slot, mark) {
			return true
		}
	}
	return false
}

// asked is the generations whose tests count: all of them, or only the
// newest when tests go by path (one, until a move: a load and no call on
// the release path).
func (f *followLocks) asked() []generation {
	gens := *f.gens.Load()
	if f.byPath {
		return gens[len(gens)-1:]
	}
	return gens
}

// newest is the current generation.
func (f *followLocks) newest() generation {
	gens := *f.gens.Load()
	return gens[len(gens)-1]
}

func (f *followLocks) Slot() int64       { return f.newest().Slot() }
func (f *followLocks) Mark() string      { return f.newest().Mark() }
func (f *followLocks) WatchPath() string { return f.newest().WatchPath() }
func (f *followLocks) NextTicket() int64 { return f.newest().NextTicket() }

// Turn is the write turn of the newest generation, where the processes
// that followed the liveness files meet (a process that has not followed
// a move yet meets the others only at SQLite's busy handler until it
// does).
func (f *followLocks) Turn() Turn { return TurnOf(f.newest()) }

// Probe is Held when any file shows the lifetime lock, Released when the
// file whose mark the holder recorded shows it released (only that
// generation answers Released), else Unknown.
func (f *followLocks) Probe(slot int64, mark string) Proof {
	p := Unknown
	for _, g := range f.asked() {
		switch g.Probe(slot, mark) {
		case Held:
			return Held
		case Released:
			p = Released
		}
	}
	return p
}

// Announce announces kind in the newest file (Announcer); Refresh
// announces it in every later one.
func (f *followLocks) Announce(kind int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !validKind(kind) || f.kind != 0 && f.kind != kind+1 {
		return errKind
	}
	if err := f.newest().Announce(kind); err != nil {
		return err
	}
	f.kind = kind + 1
	return nil
}

// Announced reports an announcement of kind by another process found in
// any file this process has locked (the newest only in the portable tier,
// whose tests go by path); an error only when no file shows one and a
// test failed.
func (f *followLocks) Announced(kind int) (bool, error) {
	f.mu.Lock()
	own := f.kind == kind+1
	f.mu.Unlock()
	if own {
		return false, ErrOwnKind
	}
	var err error
	for _, g := range f.asked() {
		a, e := g.Announced(kind)
		if a {
			return true, nil
		}
		if err == nil {
			err = e
		}
	}
	return false, err
}

// SetWant announces a want in the newest file; a dropped want is dropped
// from every file (a want announced before a move is in the older ones
// too).
func (f *followLocks) SetWant(base int64, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	gens := *f.gens.Load()
	if on {
		err := gens[len(gens)-1].SetWant(base, true)
		if err == nil {
			f.wants[base] = true
		}
		return err
	}
	delete(f.wants, base)
	var err error
	for i := len(gens) - 1; i >= 0; i-- {
		if e := gens[i].SetWant(base, false); i == len(gens)-1 {
			err = e
		}
	}
	return err
}

// Wants reports a want found in any file; an error only when no file
// shows one and a test failed.
func (f *followLocks) Wants(base, slot int64) (bool, error) {
	var err error
	for _, g := range f.asked() {
		w, e := g.Wants(base, slot)
		if w {
			return true, nil
		}
		if err == nil {
			err = e
		}
	}
	return false, err
}

// AnyWants is Wants for any other process: one generation on the common
// path (nothing moved), so a release pays one load more.
func (f *followLocks) AnyWants(base int64) (bool, error) {
	var err error
	for _, g := range f.asked() {
		w, e := g.AnyWants(base)
		if w {
			return true, nil
		}
		if err == nil {
			err = e
		}
	}
	return false, err
}

// CountWants is the largest count of any file: a waiter that moved holds
// its want in two files, so the counts are not added (a waiter seen in no
// file but another's is then missed: a lower bound, for Status).
func (f *followLocks) CountWants(base int64, limit int) (int, error) {
	n := 0
	var err error
	for _, g := range f.asked() {
		m, e := g.CountWants(base, limit)
		if e != nil && err == nil {
			err = e
		}
		n = max(n, m)
	}
	if n > 0 {
		err = nil
	}
	return n, err
}

// Close closes every generation, newest first: each drops its locks and
// removes its files when nobody else uses them and its path still names
// them (never a newer file at the same path).
func (f *followLocks) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	gens := *f.gens.Load()
	var err error
	for i := len(gens) - 1; i >= 0; i-- {
		if e := gens[i].Close(); i == len(gens)-1 {
			err = e
		}
	}
	return err
}
