//go:build darwin || freebsd || netbsd || openbsd || dragonfly || (linux && cleolease_portable)

package platform

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// flockLocks is the portable tier's evidence: flock(2) locks, which every
// Unix has and which belong to the open file, on files of our own in the
// directory "<db>-cleolease.d":
//
//	h-<slot>          each process's lifetime file, locked exclusively for its life
//	w-<base>/<slot>   a want: the waiter's file, locked exclusively while it waits
//	k-<kind>          the kind of SQLite file lock a process uses (Announcer):
//	                  every process of that kind holds a shared lock on it for its life
//	ticket            the arrival counter (8 bytes), locked while it is taken
//
// A peer tests a lock by taking a shared lock without waiting on a
// descriptor of its own and dropping it: closing that descriptor drops
// only its own flock, never the owner's (flock locks are per open file,
// unlike POSIX fcntl locks; sqlite.org/howtocorrupt.html §2.2).
type flockLocks struct {
	dir    string
	slot   int64
	mark   string
	life   *os.File // nil for a read-only Locks
	ticket *os.File
	turn   *os.File // the write turn's file (nil for a read-only Locks)
	tier   func()   // leaves the tier (tier_linux.go); nil elsewhere

	mu       sync.Mutex
	wants    map[int64]*os.File // this process's want files, by lane base
	kind     int                // the kind this process announces, plus one (0: none)
	kindFile *os.File           // the kind file it holds its shared lock on
}

// TicketOffset is where the arrival counter lives in the ticket file.
const TicketOffset = 0

// LocksDir is the directory of the portable tier's lock files for the
// database at dbPath.
func LocksDir(dbPath string) string { return dbPath + "-cleolease.d" }

// dirMode is the directory mode for a database file of mode m: its
// permission bits plus search permission where it allows reading.
func dirMode(m fs.FileMode) fs.FileMode {
	m = m.Perm() | 0o700
	return m | (m&0o444)>>2
}

// OpenLocks creates (with the database's permission bits) or opens the
// lock directory of the database at dbPath and takes this process's
// lifetime lock at slot; the Locks it returns follow the directory when
// it (or the lifetime file) is removed or replaced (Follower,
// locks_follow.go). (nil, nil) when the directory does not allow it:
// liveness then rests on pid and start time alone. On Linux,
// ErrTierConflict when processes of the default Linux tier use the
// database.
func OpenLocks(dbPath string, mode fs.FileMode, slot int64) (Locks, error) {
	return openFollowing(func() (*flockLocks, error) { return openLockDir(dbPath, mode, slot) })
}

// openLockDir is OpenLocks for the lock directory the path names now: one
// generation of the process's liveness files.
func openLockDir(dbPath string, mode fs.FileMode, slot int64) (*flockLocks, error) {
	leave, err := tierJoin(dbPath, mode)
	if err != nil || leave == nil && tierNeeded {
		return nil, err
	}
	s := &flockLocks{dir: LocksDir(dbPath), slot: slot, tier: leave, wants: map[int64]*os.File{}}
	fail := func(err error) (*flockLocks, error) {
		s.Close()
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, nil
		}
		return nil, err
	}
	life, err := s.create(filepath.Join(s.dir, "h-"+hex(slot)), mode)
	if err != nil {
		return fail(err)
	}
	s.life = life
	if err := proveFlockConflict(life.Name()); err != nil {
		return fail(err)
	}
	ino, err := fdIno(life.Fd())
	if err != nil {
		return fail(err)
	}
	s.mark = "f" + hex(int64(ino))
	// Who owns the file, for sweep: a file stays after its process closed
	// the engine (it is evidence that the holder is gone) until its
	// process has exited.
	life.Truncate(0)
	life.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+Identity()), 0)
	s.ticket, err = os.OpenFile(filepath.Join(s.dir, "ticket"), os.O_RDWR|os.O_CREATE, mode.Perm())
	if err != nil {
		return fail(err)
	}
	s.turn, err = os.OpenFile(filepath.Join(s.dir, "turn"), os.O_RDWR|os.O_CREATE, mode.Perm())
	if err != nil {
		return fail(err)
	}
	s.sweep()
	return s, nil
}

// Turn returns the write turn: an exclusive flock on the file "turn" of
// the lock directory, which is never removed (nil for a read-only Locks).
func (s *flockLocks) Turn() Turn {
	if s.turn == nil {
		return nil
	}
	return flockTurn{s.turn}
}

// flockTurn is the write turn as an exclusive flock on the open file f.
type flockTurn struct{ f *os.File }

func (t flockTurn) Try() (bool, error) {
	err := flock(t.f, unix.LOCK_EX)
	if err == unix.EWOULDBLOCK {
		return false, nil
	}
	return err == nil, err
}

// Wait blocks in flock(2) (restarted after a signal, Go's handlers being
// SA_RESTART).
func (t flockTurn) Wait() error {
	for {
		err := unix.Flock(int(t.f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func (t flockTurn) Drop() error { return unix.Flock(int(t.f.Fd()), unix.LOCK_UN) }

// flockTest reports whether a shared flock on another open file of the
// file at path would fail (someone holds an exclusive one); tests replace
// it to give a filesystem's answers.
var flockTest = func(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := flock(f, unix.LOCK_SH|unix.LOCK_NB); {
	case err == nil:
		flock(f, unix.LOCK_UN)
		return false, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	default:
		return false, err
	}
}

// proveFlockConflict checks that this process's lifetime lock on the file
// at path is seen from another open file of it: ErrLocksIgnored when it
// is not (the filesystem ignores flock).
func proveFlockConflict(path string) error {
	held, err := flockTest(path)
	if err != nil {
		return err
	}
	if !held {
		return fmt.Errorf("%w (%s)", ErrLocksIgnored, path)
	}
	return nil
}

// OpenLocksReadOnly opens the lock directory of the database at dbPath to
// test locks, taking none: (nil, nil) when there is none.
func OpenLocksReadOnly(dbPath string) (Locks, error) {
	dir := LocksDir(dbPath)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &flockLocks{dir: dir, wants: map[int64]*os.File{}}, nil
}

// create makes (or opens) the file at p in a directory it creates if
// needed, locks it exclusively and checks that p still names it (a tester
// may have removed it between the open and the lock).
func (s *flockLocks) create(p string, mode fs.FileMode) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		if err := os.MkdirAll(filepath.Dir(p), dirMode(mode)); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, mode.Perm())
		if errors.Is(err, os.ErrNotExist) && attempt < 100 {
			continue // the directory was removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		err = flock(f, unix.LOCK_EX)
		if err == nil {
			a, err1 := fdIno(f.Fd())
			b, err2 := pathIno(p)
			if err1 == nil && err2 == nil && a == b {
				return f, nil
			}
		}
		f.Close()
		if attempt == 100 {
			if err == nil {
				err = errBusyFlock
			}
			return nil, err
		}
		time.Sleep(50 * time.Microsecond)
	}
}

var errBusyFlock = errors.New("lock file busy")

// flock takes a lock without waiting; EINTR is retried.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err != unix.EINTR {
			return err
		}
	}
}

// locked reports whether another open file holds an exclusive flock on
// the file at p: (false, ErrNotExist) when there is none. With remove, a
// file found unlocked is removed while it is locked (only for files that
// are never created again under the same name).
func locked(p string, remove bool) (bool, uint64, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	if err := flock(f, unix.LOCK_SH); errors.Is(err, unix.EWOULDBLOCK) {
		return true, 0, nil
	} else if err != nil {
		return false, 0, err
	}
	ino, err := fdIno(f.Fd())
	if remove && err == nil && flock(f, unix.LOCK_EX) == nil {
		if cur, err := pathIno(p); err == nil && cur == ino {
			os.Remove(p)
		}
	}
	return false, ino, err
}

func (s *flockLocks) Slot() int64       { return s.slot }
func (s *flockLocks) Mark() string      { return s.mark }
func (s *flockLocks) WatchPath() string { return "" }

// lifePath is the lifetime file of slot.
func (s *flockLocks) lifePath(slot int64) string { return filepath.Join(s.dir, "h-"+hex(slot)) }

// current reports whether this process's lifetime file is still the one
// its path names (the directory, or the file, may have been removed).
func (s *flockLocks) current() (bool, error) {
	if s.life == nil {
		return true, nil
	}
	return sameFile(s.life, s.lifePath(s.slot))
}

// byPath: every test opens the files by path, so every generation sees
// the same files.
func (s *flockLocks) byPath() bool { return true }

// sees reports whether the lifetime file of slot that its path names now
// is the one whose mark was recorded.
func (s *flockLocks) sees(slot int64, mark string) bool {
	ino, err := pathIno(s.lifePath(slot))
	return err == nil && mark == "f"+hex(int64(ino))
}

// removeOwn removes the file at path if it is still the open file f: a
// file this process followed away from shares its name with the one its
// newer generation holds.
func removeOwn(path string, f *os.File) {
	if same, _ := sameFile(f, path); same {
		os.Remove(path)
	}
}

// Probe tests the lifetime file of slot. A holder whose recorded file is
// there and unlocked is gone (and its file is removed).
func (s *flockLocks) Probe(slot int64, mark string) Proof {
	if slot <= 0 || !strings.HasPrefix(mark, "f") {
		return Unknown // not this tier's evidence
	}
	p := filepath.Join(s.dir, "h-"+hex(slot))
	held, ino, err := locked(p, false)
	switch {
	case err != nil:
		return Unknown
	case held:
		return Held
	case "f"+hex(int64(ino)) == mark:
		return Released
	}
	return Unknown
}

// sweep removes the lifetime files (and doorbell sockets, bell_path.go)
// of processes that have exited. A file whose process still runs stays,
// unlocked: it proves that a row the process left behind (its engine
// closed) has no live holder.
func (s *flockLocks) sweep() {
	d, err := os.Open(s.dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if !strings.HasPrefix(n, "h-") || n == "h-"+hex(s.slot) {
			continue
		}
		p := filepath.Join(s.dir, n)
		if held, _, err := locked(p, false); err != nil || held || !exited(p) {
			continue
		}
		if held, _, err := locked(p, true); err == nil && !held {
			os.Remove(filepath.Join(s.dir, "s-"+n[2:]))
		}
	}
}

// kindPath is the file of the processes that announce kind.
func (s *flockLocks) kindPath(kind int) string {
	return filepath.Join(s.dir, "k-"+hex(int64(kind)))
}

// Announce takes a shared flock on the kind file k-<kind>, creating it,
// for the rest of this process's life. Kind files are never removed: every
// process of a kind shares one. When the path no longer names the file
// this process locked (a cleaner removed it, or the whole directory:
// Refresh announces again on the newest generation), it locks the file
// the path names now, creating it.
func (s *flockLocks) Announce(kind int) error {
	if s.life == nil {
		return ErrUnsupported // a read-only Locks
	}
	s.mu.Lock()
	had, old := s.kind, s.kindFile
	s.mu.Unlock()
	if !validKind(kind) || had != 0 && had != kind+1 {
		return errKind
	}
	p := s.kindPath(kind)
	if had == kind+1 {
		if same, err := sameFile(old, p); same || err != nil {
			return err
		}
	}
	mode := fs.FileMode(0o600)
	if fi, err := s.life.Stat(); err == nil {
		mode = fi.Mode().Perm()
	}
	// Not under mu, which SetWant takes. Only one Announce runs at a
	// time: followLocks serialises them.
	f, err := shareFile(p, mode)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wants == nil { // closed meanwhile
		f.Close()
		return os.ErrClosed
	}
	if s.kindFile != nil {
		s.kindFile.Close() // its lock is on a file nobody finds any more
	}
	s.kindFile, s.kind = f, kind+1
	return nil
}

// shareFile opens (creating it, and its directory, if needed) the file at
// p, takes a shared flock on it and checks that p still names it. Opened
// read-only: a shared flock needs no more, and a kind file another user's
// process created is readable where the database is. A peer's test
// (Announced) holds an exclusive lock on it for a few microseconds: the
// lock is tried again for up to about 10 ms, as lockTicket does.
func shareFile(p string, mode fs.FileMode) (*os.File, error) {
	var err error
	for attempt := 0; attempt < 200; attempt++ {
		if attempt > 0 {
			time.Sleep(50 * time.Microsecond)
		}
		if err = os.MkdirAll(filepath.Dir(p), dirMode(mode)); err != nil {
			return nil, err
		}
		var f *os.File
		f, err = os.OpenFile(p, os.O_RDONLY|os.O_CREATE, mode.Perm())
		if errors.Is(err, os.ErrNotExist) {
			continue // the directory was removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		if err = flock(f, unix.LOCK_SH); err == nil {
			var same bool
			if same, err = sameFile(f, p); same {
				return f, nil
			}
			if err == nil {
				err = errBusyFlock // removed meanwhile: open the new one
			}
		}
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, errBusyFlock) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("lock %s: %w", p, err)
}

// Announced tests the kind file k-<kind> that its path names: an
// exclusive flock on a descriptor of its own fails while another open
// file holds its shared lock (closing that descriptor drops only its own
// flock: flock locks belong to the open file). No kind file: nobody
// announces the kind. A file found locked is tested again (a peer's test
// locks it too for a moment, see testTries).
func (s *flockLocks) Announced(kind int) (bool, error) {
	if !validKind(kind) {
		return false, errKind
	}
	s.mu.Lock()
	own := s.kind == kind+1
	s.mu.Unlock()
	if own {
		return false, ErrOwnKind
	}
	f, err := os.Open(s.kindPath(kind))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	for i := 1; ; i++ {
		switch err := flock(f, unix.LOCK_EX); {
		case err == nil:
			flock(f, unix.LOCK_UN)
			return false, nil
		case !errors.Is(err, unix.EWOULDBLOCK):
			return false, err
		case i == testTries:
			return true, nil
		}
		time.Sleep(testPause(i))
	}
}

func (s *flockLocks) wantDir(base int64) string { return filepath.Join(s.dir, "w-"+hex(base)) }

func (s *flockLocks) SetWant(base int64, on bool) error {
	if s.life == nil {
		return ErrUnsupported
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.wants[base]
	p := filepath.Join(s.wantDir(base), hex(s.slot))
	if !on {
		if f == nil {
			return nil
		}
		delete(s.wants, base)
		removeOwn(p, f) // first: a tester never finds it unlocked
		return f.Close()
	}
	if f != nil {
		return nil
	}
	mode := fs.FileMode(0o600)
	if fi, err := s.life.Stat(); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := s.create(p, mode)
	if err != nil {
		return err
	}
	s.wants[base] = f
	return nil
}

// Wants tests the want file of slot. One found unlocked whose process is
// gone is removed.
func (s *flockLocks) Wants(base, slot int64) (bool, error) {
	held, _, err := locked(filepath.Join(s.wantDir(base), hex(slot)), false)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err == nil && !held {
		s.dropStale(base, slot)
	}
	return held, err
}

// dropStale removes the unlocked want file of slot if its process is gone
// (a live one may be about to lock a file of the same name again).
func (s *flockLocks) dropStale(base, slot int64) {
	alive, _, err := locked(filepath.Join(s.dir, "h-"+hex(slot)), false)
	if err == nil && alive {
		return
	}
	locked(filepath.Join(s.wantDir(base), hex(slot)), true)
}

func (s *flockLocks) AnyWants(base int64) (bool, error) {
	n, err := s.CountWants(base, 1)
	return n > 0, err
}

func (s *flockLocks) CountWants(base int64, limit int) (int, error) {
	d, err := os.Open(s.wantDir(base))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if n >= limit {
			break
		}
		if s.slot != 0 && name == hex(s.slot) {
			continue // this process's own
		}
		held, _, err := locked(filepath.Join(s.wantDir(base), name), false)
		switch {
		case err == nil && held:
			n++
		case err == nil:
			if slot, perr := parseHex(name); perr == nil {
				s.dropStale(base, slot)
			}
		}
	}
	return n, nil
}

// NextTicket takes the next arrival number from the ticket file.
func (s *flockLocks) NextTicket() int64 {
	if !s.lockTicket() {
		return 0
	}
	defer flock(s.ticket, unix.LOCK_UN)
	t := s.readTicket() + 1
	if !s.writeTicket(t) {
		return 0
	}
	return t
}

// lastTicket reads the arrival counter (0 when it cannot be read).
func (s *flockLocks) lastTicket() int64 {
	if !s.lockTicket() {
		return 0
	}
	defer flock(s.ticket, unix.LOCK_UN)
	return s.readTicket()
}

// raiseTicket sets the arrival counter to at least floor (see
// byteLocks.raiseTicket).
func (s *flockLocks) raiseTicket(floor int64) {
	if floor <= 0 || !s.lockTicket() {
		return
	}
	defer flock(s.ticket, unix.LOCK_UN)
	if s.readTicket() < floor {
		s.writeTicket(floor)
	}
}

// lockTicket takes the ticket file's lock: non-blocking attempts for up
// to ~10 ms (a peer stopped, SIGSTOP, inside this few-microsecond section
// must not stall everyone). It reports whether it got it.
func (s *flockLocks) lockTicket() bool {
	if s.ticket == nil {
		return false
	}
	for i := 0; flock(s.ticket, unix.LOCK_EX) != nil; i++ {
		if i == 200 {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

// readTicket reads the counter (0 for a new file); the caller holds its
// lock.
func (s *flockLocks) readTicket() int64 {
	var b [8]byte
	if n, err := s.ticket.ReadAt(b[:], TicketOffset); err != nil && n != 8 {
		b = [8]byte{}
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// writeTicket writes the counter; the caller holds its lock.
func (s *flockLocks) writeTicket(t int64) bool {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(t))
	_, err := s.ticket.WriteAt(b[:], TicketOffset)
	return err == nil
}

// Close drops every lock, removing this process's files first.
func (s *flockLocks) Close() error {
	s.mu.Lock()
	for base, f := range s.wants {
		removeOwn(filepath.Join(s.wantDir(base), hex(s.slot)), f)
		f.Close()
		os.Remove(s.wantDir(base)) // fails unless empty
	}
	s.wants = nil
	if s.kindFile != nil {
		s.kindFile.Close() // the file stays, for the other processes of the kind
		s.kindFile, s.kind = nil, 0
	}
	s.mu.Unlock()
	var err error
	if s.life != nil {
		err = s.life.Close() // the file stays: see sweep
	}
	if s.ticket != nil {
		s.ticket.Close()
	}
	if s.turn != nil {
		s.turn.Close() // the file stays, for the other processes
	}
	if s.tier != nil {
		s.tier()
	}
	return err
}

// exited reports whether the process that wrote the lifetime file at p
// ("pid identity") has exited: its pid is gone or its identity differs
// (never when a start time is unknown, "?": compareStart).
func exited(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	pid, ident, ok := strings.Cut(string(b), " ")
	n, err := strconv.ParseInt(pid, 10, 64)
	if !ok || err != nil {
		return false
	}
	parts := strings.Split(ident, "/")
	if len(parts) != 3 || parts[0] != BootID() || parts[1] != PIDNamespace() {
		return parts[0] != BootID() && len(parts) == 3 // another boot: gone
	}
	// An unknown start time cannot tell: the file stays.
	return compareStart(parts[2], StartTime(n)) == startDiffers
}

// Portable reports whether this build uses the portable tier's evidence
// (flock on files of our own) rather than byte-range locks on the sidecar.
const Portable = true

// KeepsLocks reports whether this build keeps liveness locks: every
// process with the database open through cleolease holds its lifetime
// lock in the liveness locks' files, so when they do not exist no such
// process has the database open.
const KeepsLocks = true
