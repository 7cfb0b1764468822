package platform

import (
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"
)

// Locks is the liveness evidence of the processes that use one database,
// kept in files of our own beside it, never in the database or its
// companions. It has three jobs, each its own interface: Liveness (each
// process's lifetime lock), Waiting (who waits for a lane) and Arrivals
// (the order in which waiters arrived). Slots are what SlotFor returns
// for a holder id. A read-only Locks (OpenLocksReadOnly) only tests.
type Locks interface {
	Liveness
	Waiting
	Arrivals
	// WatchPath is the file whose closes a FileWatch reports as exits
	// ("" when this tier has none).
	WatchPath() string
	// Close drops every lock (and removes files nobody uses any more).
	Close() error
}

// Liveness is the lock each process holds for its whole life at its slot:
// the kernel drops it when the process dies, however it dies, so a peer
// that finds it gone knows the process is gone.
type Liveness interface {
	// Slot is this process's slot (0 for a read-only Locks).
	Slot() int64
	// Mark names the file this process's lifetime lock is on; a holder
	// records it with its identity so that a peer seeing that same file
	// without the lock knows the holder is gone.
	Mark() string
	// Probe tests the lifetime lock at slot of the holder that recorded
	// mark.
	Probe(slot int64, mark string) Proof
}

// Waiting is the announcements of waiting processes: a process waiting for
// a lane holds a lock on its want (the lane's region base plus its slot)
// for as long as it waits, which holders test.
type Waiting interface {
	// SetWant takes (on) or drops this process's want of the lane whose
	// region starts at base.
	SetWant(base int64, on bool) error
	// Wants reports whether the process at slot wants the lane at base.
	Wants(base, slot int64) (bool, error)
	// AnyWants reports whether another process wants the lane at base.
	AnyWants(base int64) (bool, error)
	// CountWants counts the other processes that want the lane at base,
	// up to limit.
	CountWants(base int64, limit int) (int, error)
}

// Arrivals hands out tickets in arrival order across the processes of a
// database, so that a waiter has its place in line before it can write a
// queue row.
type Arrivals interface {
	// NextTicket returns the next arrival number of the database, or 0
	// when it cannot be taken promptly.
	NextTicket() int64
}

// Announcer is implemented by the Locks that OpenLocks returns: each
// process announces, on the liveness files, the kind of file lock its
// SQLite takes on the database (a number below MaxKinds that the caller
// gives each kind: package lease numbers sqlbase's Locking kinds), with a
// shared lock it holds for its whole life, so that the kernel drops the
// announcement when the process dies, however it dies: nothing to clean
// up, and nothing written in the database (opens stay write-free, as on a
// LiteFS replica). A process whose own kind cannot coexist with one that
// another process announces refuses to open. Each announces first and
// tests afterwards, so of two processes opening at once at least one sees
// the other.
//
// Where the announcement lives: on the Linux tier and Windows, a shared
// byte-range lock on the sidecar byte kindOffset+kind (locks_bytes.go);
// in the portable tier, a shared flock on the file "k-<kind>" of the lock
// directory (locks_flock.go). Tests and simulations whose Locks do not
// implement it announce nothing.
type Announcer interface {
	// Announce takes, for the rest of this process's life (until Close),
	// the shared lock that announces kind. A process announces one kind:
	// the same kind again is a no-op that puts the announcement back where
	// it was lost (a lock file removed), another kind an error.
	Announce(kind int) error
	// Announced reports whether another process announces kind. kind must
	// not be the one this process announces (ErrOwnKind): a test on
	// Windows and in the portable tier would see this process's own lock.
	Announced(kind int) (bool, error)
}

// MaxKinds bounds the kinds an Announcer tells apart: kinds are 0 to
// MaxKinds-1.
const MaxKinds = 64

// ErrOwnKind reports a test (Announced) of the kind this process
// announces itself.
var ErrOwnKind = errors.New("the kind tested is this process's own")

// errKind reports a kind out of range, or a second kind announced by one
// process.
var errKind = errors.New("lock kind out of range or different from the one announced")

// testTries is how many times Announced tests a kind it finds held before
// it reports it announced. On Windows and in the portable tier a test
// takes an exclusive lock for a few microseconds, so a peer testing the
// same kind at that moment (two processes of one kind opening at once)
// makes it look held, whereas an announcement stays for its process's
// life: one test that finds the kind free settles it. Between tests it
// pauses (testPause).
const testTries = 20

// testPause is how long Announced waits before its try-th test (from 1)
// of a kind it found held: a growing pause with jitter, so that peers
// testing at once (each holding the lock for a moment) fall out of step,
// and a peer descheduled while it held the lock (Wine, a loaded machine)
// has let go. At most about 20 ms over testTries tries.
func testPause(try int) time.Duration {
	step := time.Duration(try) * 100 * time.Microsecond
	return step/2 + rand.N(step)
}

// validKind reports whether kind can be announced.
func validKind(kind int) bool { return kind >= 0 && kind < MaxKinds }

// Proof is what a probe of a lifetime lock proves.
type Proof int

const (
	// Unknown: the lock could not be found or tested; judge otherwise.
	Unknown Proof = iota
	// Held: the holder's lock is held, so the holder is alive.
	Held
	// Released: the holder's lock file is there and unlocked, so the
	// holder is gone.
	Released
)

// SlotFor maps a holder id to its slot: a number from 1<<20 to 1<<46, so
// that distinct holders practically never share one (a collision only
// makes a dead holder look alive, never a live one dead). On the Linux
// tier and Windows it is a byte offset in the sidecar.
func SlotFor(holderID string) int64 {
	h := fnv.New64a()
	h.Write([]byte(holderID))
	return 1<<20 + int64(h.Sum64()%(1<<46-1<<20))
}

// WantBits is the size of a lane's want region: 1<<WantBits slots.
const WantBits = 46

// SidecarPath is the sidecar of the database at dbPath.
func SidecarPath(dbPath string) string { return dbPath + "-cleolease" }

// hex formats v as a file name part.
func hex(v int64) string { return strconv.FormatInt(v, 16) }

// parseHex parses a file name part written by hex.
func parseHex(s string) (int64, error) { return strconv.ParseInt(s, 16, 64) }
