//go:build (linux && !cleolease_portable) || windows

package platform

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// byteLocks keeps every process's evidence as byte-range locks on one
// shared sidecar file, "<db>-cleolease": the lifetime lock is a write lock
// on the byte at the process's slot, a want a shared lock on the byte
// base+slot, the kind of SQLite file lock the process uses (Announcer) a
// shared lock on the byte kindOffset+kind, and the arrival counter 8 bytes
// at ticketOffset guarded by a write lock on them. Nobody reads or writes
// the lock bytes (on Windows the locks are mandatory). The locks belong to
// the open file (Linux open-file-description locks, rangelock_linux.go;
// LockFileEx on a handle, rangelock_windows.go): closing another
// descriptor of the sidecar drops none of them, and they are never taken
// on the database.
type byteLocks struct {
	path string
	f    *os.File
	// turnF is the open file the write turn is locked through: f on
	// Linux; a handle of its own on Windows (turnFile), where a blocking
	// LockFileEx on a synchronous handle holds up every other request on
	// that handle until it is granted.
	turnF *os.File
	r     ranges // the OS's locks on f (a model of another OS's in tests)
	slot  int64
	mark  string

	mu    sync.Mutex
	wants map[int64]bool // the bases of the lanes this process announces a want for
	kind  int            // the kind this process announces here, plus one (0: none)
}

// ranges is the OS's byte-range locks on one open file of the sidecar:
// fileRanges, a thin wrapper over rangelock_linux.go or
// rangelock_windows.go. The two OSes differ where byteLocks must not
// care: on Windows a test takes and drops a lock (so a peer's lock can
// fail while a test holds it) and sees this handle's own locks; on Linux
// a test changes nothing and sees only other open files' locks. Tests on
// Linux replace it with a model of Windows' answers.
type ranges interface {
	// lock takes an exclusive (write) or shared lock on the n bytes from
	// start without waiting: errBusy when a conflicting lock is held.
	lock(start, n int64, write bool) error
	// unlock drops this file's lock on the n bytes from start.
	unlock(start, n int64) error
	// test reports whether a lock conflicting with an exclusive (write)
	// or shared lock on the n bytes from start is held.
	test(start, n int64, write bool) (bool, error)
}

// fileRanges is ranges on the open file f.
type fileRanges struct{ f *os.File }

func (r fileRanges) lock(start, n int64, write bool) error { return lockRange(r.f, start, n, write) }
func (r fileRanges) unlock(start, n int64) error           { return unlockRange(r.f, start, n) }
func (r fileRanges) test(start, n int64, write bool) (bool, error) {
	return testRange(r.f, start, n, write)
}

// The sidecar's layout: every byte the processes lock or use, in one
// place. Only the arrival counter is data; nobody reads or writes the
// other bytes (on Windows locked bytes cannot be read).
//
//	offset               length      what                                   lock
//	8                    1           tierByte: a portable-tier process     shared, its life (tier_linux.go)
//	16                   8           the arrival counter (data)            exclusive while counting
//	1<<12                MaxKinds    kindOffset+kind: SQLite's lock kind   shared, its life (Announce)
//	1<<13                1           turnByte: the file's write turn       exclusive, one transaction (Turn)
//	1<<20 .. 1<<46       1 each      a process's lifetime lock at its slot exclusive, its life
//	1<<46 + slot         1 each      a process waiting for the turn       shared, while it waits (TurnQueue)
//	1<<47 + h·2^46       2^46 each   a lane's want region (h < 2^16, the   shared, while it waits (SetWant)
//	                                 lane's hash), one byte base+slot each
//
// A new use takes bytes below 1<<20 that no row above names.

// ticketOffset holds the sidecar's arrival counter (8 bytes, little
// endian).
const ticketOffset = 16

// turnByte is the sidecar byte a process locks exclusively while it holds
// the file's write turn (Turn).
const turnByte = 1 << 13

// turnWants is the start of the region where a process waiting for the
// turn holds a shared lock on turnWants+slot (TurnQueue): above every slot
// (below 1<<46), below every lane's want region (from 1<<47).
const turnWants = 1 << 46

// TicketOffset is where the arrival counter lives in the sidecar, for
// tests that write rows naming it.
const TicketOffset = ticketOffset

// kindOffset is the first of the MaxKinds sidecar bytes on which the
// processes announce the kind of SQLite file lock they use (Announcer):
// beyond the data (the arrival counter) and tierByte, below the lowest
// slot (1<<20) and every lane's want region (from 1<<47).
const kindOffset = 1 << 12

// OpenLocks creates (with mode's permission bits) or opens the sidecar of
// the database at dbPath and takes this process's lifetime lock at slot;
// the Locks it returns follow the sidecar when it is removed or replaced
// (Follower, locks_follow.go). It returns (nil, nil) when the directory
// does not allow it: liveness then rests on pid and start time alone.
// ErrTierConflict when processes of the portable tier use the database;
// ErrLocksIgnored (wrapped, naming the sidecar) when a second open file of
// the sidecar does not see the lifetime lock (proveConflict).
func OpenLocks(dbPath string, mode fs.FileMode, slot int64) (Locks, error) {
	return openFollowing(func() (*byteLocks, error) { return openSidecar(dbPath, mode, slot) })
}

// openSidecar is OpenLocks for the one sidecar file the path names now:
// one generation of the process's liveness files.
func openSidecar(dbPath string, mode fs.FileMode, slot int64) (*byteLocks, error) {
	p := SidecarPath(dbPath)
	busy := false
	for attempt := 0; attempt < 50; attempt++ {
		f, err := openSidecarFile(p, os.O_RDWR|os.O_CREATE, mode.Perm())
		if err != nil {
			if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return nil, nil
			}
			return nil, err
		}
		if err := lockRange(f, slot, 1, true); err != nil {
			f.Close()
			if errors.Is(err, errBusy) {
				// A closing peer holds the whole file while it removes it.
				busy = true
				time.Sleep(100 * time.Microsecond)
				continue
			}
			return nil, fmt.Errorf("lock sidecar %s: %w", p, err)
		}
		// A peer may have removed the file between our open and our lock;
		// make sure the lock sits on the file the path names now.
		mark, same := fileMark(f, p)
		if !same {
			f.Close()
			continue
		}
		if err := tierCheck(f); err != nil {
			unlockRange(f, slot, 1)
			f.Close()
			return nil, err
		}
		if err := proveConflictOnce(f, p, slot); err != nil {
			unlockRange(f, slot, 1)
			f.Close()
			return nil, err
		}
		return &byteLocks{path: p, f: f, r: fileRanges{f}, slot: slot, mark: mark, turnF: turnFile(f, p)}, nil
	}
	if busy {
		return nil, fmt.Errorf("lock sidecar %s: %w", p, errBusy)
	}
	return nil, nil // the path keeps naming new files: no locks
}

// openTester opens another file (open file description, handle) of the
// sidecar at path to test locks through; tests replace it to give a
// filesystem's answers.
var openTester = func(path string) (ranges, func() error, error) {
	f, err := openSidecarFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	return fileRanges{f}, f.Close, nil
}

// proveConflict checks that the lifetime lock this process just took at
// slot of the sidecar at path is seen from another open file of it, as
// any other process's test would see it: ErrLocksIgnored when it is not
// (the filesystem ignores the locks, and a live holder would look dead).
func proveConflict(path string, slot int64) error {
	r, closeFn, err := openTester(path)
	if err != nil {
		return fmt.Errorf("test lock on sidecar %s: %w", path, err)
	}
	defer closeFn()
	held, err := r.test(slot, 1, false)
	if err != nil {
		return fmt.Errorf("test lock on sidecar %s: %w", path, err)
	}
	if !held {
		return fmt.Errorf("%w (%s)", ErrLocksIgnored, path)
	}
	return nil
}

// OpenLocksReadOnly opens an existing sidecar to test locks, taking none:
// (nil, nil) when there is none.
func OpenLocksReadOnly(dbPath string) (Locks, error) {
	p := SidecarPath(dbPath)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mark, _ := fileMark(f, p)
	return &byteLocks{path: p, f: f, r: fileRanges{f}, mark: mark}, nil
}

func (s *byteLocks) Slot() int64 { return s.slot }

// Turn returns the write turn on turnByte of this sidecar (nil for a
// read-only Locks, which takes no lock).
func (s *byteLocks) Turn() Turn {
	if s.slot == 0 {
		return nil
	}
	if announcesWaiters {
		return queuedByteTurn{byteTurn{s.turnF, s.slot}}
	}
	return byteTurn{s.turnF, s.slot}
}
func (s *byteLocks) Mark() string      { return s.mark }
func (s *byteLocks) WatchPath() string { return s.path }

// current reports whether the sidecar's path still names this open file.
func (s *byteLocks) current() (bool, error) { return sameFile(s.f, s.path) }

// byPath: each sidecar file is tested through its own open file.
func (s *byteLocks) byPath() bool { return false }

// sees reports whether mark names this sidecar file: every process
// holding its lifetime lock in it recorded that mark.
func (s *byteLocks) sees(slot int64, mark string) bool { return mark != "" && mark == s.mark }

// Probe tests the write lock on byte slot. A holder that recorded this
// sidecar's mark and holds no lock is gone.
func (s *byteLocks) Probe(slot int64, mark string) Proof {
	held, err := s.r.test(slot, 1, false)
	switch {
	case err != nil:
		return Unknown
	case held:
		return Held
	case mark != "" && mark == s.mark:
		return Released
	}
	return Unknown
}

// SetWant takes or drops the shared lock on byte base+slot. On Windows
// a peer's test (Wants, AnyWants, CountWants) holds an exclusive lock over
// it for a few microseconds, during which the want fails: it is tried
// again for up to about 10 ms, as NextTicket does, so that a waiter is not
// left unannounced (the hand-off would skip it); errBusy after that.
func (s *byteLocks) SetWant(base int64, on bool) error {
	if !on {
		s.markWant(base, false)
		return s.r.unlock(base+s.slot, 1)
	}
	// Marked first: our own byte is left out of AnyWants and CountWants
	// from before it is locked (a Windows test would see it).
	s.markWant(base, true)
	err := s.r.lock(base+s.slot, 1, false)
	for i := 0; errors.Is(err, errBusy) && i < 200; i++ {
		time.Sleep(50 * time.Microsecond)
		err = s.r.lock(base+s.slot, 1, false)
	}
	if err != nil {
		s.markWant(base, false)
	}
	return err
}

// Announce takes the shared lock on the byte kindOffset+kind. On Windows
// a peer's test of that kind (Announced) holds an exclusive lock on it for
// a few microseconds, during which the lock fails: it is tried again for
// up to about 10 ms, as SetWant does; errBusy after that.
func (s *byteLocks) Announce(kind int) error {
	if s.slot == 0 {
		return ErrUnsupported // a read-only Locks
	}
	s.mu.Lock()
	had := s.kind
	s.mu.Unlock()
	if !validKind(kind) || had != 0 && had != kind+1 {
		return errKind
	}
	if had == kind+1 {
		return nil
	}
	// Not under mu, which the release path takes (othersRegion). Only one
	// Announce runs at a time: followLocks serialises them.
	err := s.r.lock(kindOffset+int64(kind), 1, false)
	for i := 0; errors.Is(err, errBusy) && i < 200; i++ {
		time.Sleep(50 * time.Microsecond)
		err = s.r.lock(kindOffset+int64(kind), 1, false)
	}
	if err == nil {
		s.mu.Lock()
		s.kind = kind + 1
		s.mu.Unlock()
	}
	return err
}

// Announced tests the byte kindOffset+kind for another open file's lock
// (on Windows, by taking an exclusive lock on it and dropping it: a byte
// found held is tested again, see testTries).
func (s *byteLocks) Announced(kind int) (bool, error) {
	if !validKind(kind) {
		return false, errKind
	}
	s.mu.Lock()
	own := s.kind == kind+1
	s.mu.Unlock()
	if own {
		return false, ErrOwnKind
	}
	for i := 1; ; i++ {
		held, err := s.r.test(kindOffset+int64(kind), 1, true)
		if err != nil || !held || i == testTries {
			return held, err
		}
		time.Sleep(testPause(i))
	}
}

// markWant records whether this process announces a want at base.
func (s *byteLocks) markWant(base int64, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		delete(s.wants, base)
		return
	}
	if s.wants == nil {
		s.wants = map[int64]bool{}
	}
	s.wants[base] = true
}

func (s *byteLocks) Wants(base, slot int64) (bool, error) {
	return s.r.test(base+slot, 1, true)
}

// AnyWants tests the lane's want region around this process's own want,
// if it has one: a Windows test would see it (LockFileEx: an exclusive
// lock cannot overlap any locked region, this handle's included).
func (s *byteLocks) AnyWants(base int64) (bool, error) {
	regions, n := s.othersRegion(base)
	for _, r := range regions[:n] {
		if w, err := s.r.test(r[0], r[1], true); w || err != nil {
			return w, err
		}
	}
	return false, nil
}

func (s *byteLocks) CountWants(base int64, limit int) (int, error) {
	n := 0
	regions, k := s.othersRegion(base)
	for _, r := range regions[:k] {
		m, err := s.lockedBytes(r[0], r[1], limit-n)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// othersRegion is the lane's want region at base without this process's
// own want, if it holds one, as the first n of regions, each a (start,
// length) pair: around the byte base+slot (slot is at least 1<<20 and below
// 1<<WantBits, so both sides are non-empty). An array, not a slice, so that
// the check on every release allocates nothing.
func (s *byteLocks) othersRegion(base int64) (regions [2][2]int64, n int) {
	s.mu.Lock()
	own := s.wants[base]
	s.mu.Unlock()
	if !own {
		return [2][2]int64{{base, 1 << WantBits}}, 1
	}
	return [2][2]int64{{base, s.slot}, {base + s.slot + 1, 1<<WantBits - s.slot - 1}}, 2
}

// lockedBytes counts the bytes of the n from start on which another open
// file holds a lock, up to limit. A test reports one conflicting lock, not
// necessarily the lowest: the range is bisected, so a count costs about
// 2·log2(n) tests per locked byte.
func (s *byteLocks) lockedBytes(start, n int64, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	w, err := s.r.test(start, n, true)
	if err != nil || !w {
		return 0, err
	}
	if n == 1 {
		return 1, nil
	}
	half := n / 2
	a, err := s.lockedBytes(start, half, limit)
	if err != nil {
		return 0, err
	}
	b, err := s.lockedBytes(start+half, n-half, limit-a)
	return a + b, err
}

// NextTicket takes the next arrival number: a counter in the sidecar, so
// a waiter takes its place in line the moment it arrives, even while a
// holder's transaction keeps SQLite's write lock and the queue row cannot
// be written yet.
func (s *byteLocks) NextTicket() int64 {
	// Without a ticket (lockTicket gave up) the waiter falls back to the
	// queue's own order.
	if !s.lockTicket() {
		return 0
	}
	defer s.r.unlock(ticketOffset, 8)
	t := s.readTicket() + 1
	if !s.writeTicket(t) {
		return 0
	}
	return t
}

// lockTicket takes the counter's lock: non-blocking attempts for up to
// ~10 ms (a peer stopped inside its few-microsecond section must not
// stall everyone). It reports whether it got it.
func (s *byteLocks) lockTicket() bool {
	for i := 0; s.r.lock(ticketOffset, 8, true) != nil; i++ {
		if i == 200 {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

// readTicket reads the counter (0 for a new file); the caller holds its
// lock.
func (s *byteLocks) readTicket() int64 {
	var b [8]byte
	if n, err := s.f.ReadAt(b[:], ticketOffset); err != nil && n != 8 {
		b = [8]byte{}
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// writeTicket writes the counter; the caller holds its lock.
func (s *byteLocks) writeTicket(t int64) bool {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(t))
	_, err := s.f.WriteAt(b[:], ticketOffset)
	return err == nil
}

// lastTicket reads the arrival counter (0 when it cannot be read).
func (s *byteLocks) lastTicket() int64 {
	if !s.lockTicket() {
		return 0
	}
	defer s.r.unlock(ticketOffset, 8)
	return s.readTicket()
}

// raiseTicket sets the arrival counter to at least floor, so that tickets
// taken from a new sidecar follow those of the file it replaces (a
// waiter's place in line compares tickets).
func (s *byteLocks) raiseTicket(floor int64) {
	if floor <= 0 || !s.lockTicket() {
		return
	}
	defer s.r.unlock(ticketOffset, 8)
	if s.readTicket() < floor {
		s.writeTicket(floor)
	}
}

// Close drops the lifetime lock and removes the sidecar when no other
// process holds any lock on it and its path still names it: a file this
// process followed away from (Follower) is never removed, since its path
// now names the sidecar its peers use.
func (s *byteLocks) Close() error {
	if s.turnF != nil && s.turnF != s.f {
		s.turnF.Close()
	}
	if s.slot != 0 && removable(s.f, s.slot) {
		// Nobody else holds a byte of it: safe to remove. A process that
		// opens it right now and locks the removed file sees that the path
		// names another file and opens again.
		if same, _ := sameFile(s.f, s.path); same {
			os.Remove(s.path)
		}
	}
	return s.f.Close()
}

// errBusy reports a lock held by another open file.
var errBusy = errors.New("lock held elsewhere")

// Portable reports whether this build uses the portable tier's evidence
// (flock on files of our own) rather than byte-range locks on the sidecar.
const Portable = false

// KeepsLocks reports whether this build keeps liveness locks: every
// process with the database open through cleolease holds its lifetime
// lock in the liveness locks' files, so when they do not exist no such
// process has the database open.
const KeepsLocks = true

// byteTurn is the write turn as an exclusive lock on turnByte of the
// sidecar's open file f, for the process at slot.
type byteTurn struct {
	f    *os.File
	slot int64
}

// queuedByteTurn is byteTurn with the waiters' announcements (TurnQueue)
// on turnWants+slot, where the OS tells which byte of a range another
// open file locks (announcesWaiters: Linux).
type queuedByteTurn struct{ byteTurn }

// Wanted tests the turn's want region for another open file's lock.
func (t queuedByteTurn) Wanted() (bool, error) {
	_, ok, err := firstLocked(t.f, turnWants, turnWants)
	return ok, err
}

// Yield waits for an exclusive lock on the first announced want's byte —
// granted when its process drops its shared lock — and drops it at once.
func (t queuedByteTurn) Yield() error {
	at, ok, err := firstLocked(t.f, turnWants, turnWants)
	if err != nil || !ok {
		return err
	}
	if err := waitRange(t.f, at, 1); err != nil {
		return err
	}
	return unlockRange(t.f, at, 1)
}

// Announce takes (without waiting) or drops the shared lock on
// turnWants+slot; a process that yields to this one may hold the byte for
// a moment, and the announcement is then skipped (nil): it only orders.
func (t queuedByteTurn) Announce(on bool) error {
	if !on {
		return unlockRange(t.f, turnWants+t.slot, 1)
	}
	if err := lockRange(t.f, turnWants+t.slot, 1, false); err != errBusy {
		return err
	}
	return nil
}

func (t byteTurn) Try() (bool, error) {
	err := lockRange(t.f, turnByte, 1, true)
	if err == errBusy {
		return false, nil
	}
	return err == nil, err
}

func (t byteTurn) Wait() error { return waitRange(t.f, turnByte, 1) }
func (t byteTurn) Drop() error { return unlockRange(t.f, turnByte, 1) }
