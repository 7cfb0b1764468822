//go:build linux

package lease

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Liveness evidence, strongest first (lease-anchors §6):
//
//  1. Every engine holds an open-file-description (OFD) write lock on one
//     byte of the sidecar file "<db>-cleolease" for its whole life, at an
//     offset derived from its holder id (the row's holder_slot). The kernel
//     drops the lock when the process dies, however it dies. A peer tests
//     it with F_OFD_GETLK, which changes nothing. OFD locks, unlike POSIX
//     fcntl locks, are not dropped when another descriptor of the same file
//     is closed, and they are never taken on the database file itself.
//  2. When the lock is absent (the sidecar was deleted or replaced, or the
//     row was written by another implementation), the pid plus the process
//     start time recorded in holder_start ("bootid/pidns/starttime") decide:
//     a missing pid, or a pid whose start time differs (reused), is dead.
//  3. A row with no holder_start (the original implementation's rows) falls
//     back to kill(pid, 0): ESRCH is dead, anything else alive.

// procIdentity returns this process's holder_start string.
func procIdentity() string {
	return fmt.Sprintf("%s/%s/%s", bootID(), pidNamespace("self"), startTime("self"))
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "?"
	}
	return string(bytes.TrimSpace(b))
}

func pidNamespace(pid string) string {
	s, err := os.Readlink("/proc/" + pid + "/ns/pid")
	if err != nil {
		return "?"
	}
	return s
}

// startTime reads field 22 of /proc/PID/stat (clock ticks since boot). The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted after its closing parenthesis.
func startTime(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19]. A zombie (Z) or dead (X)
	// process has exited; only its parent has not reaped it yet.
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// slotFor maps a holder id to its byte in the sidecar: offsets from 1<<20
// to 1<<46, so distinct holders practically never share one (a collision
// only makes a dead holder look alive, never a live one dead).
func slotFor(holderID string) int64 {
	h := fnv.New64a()
	h.Write([]byte(holderID))
	return 1<<20 + int64(h.Sum64()%(1<<46-1<<20))
}

// sidecar is this engine's open sidecar file and its lifetime lock.
type sidecar struct {
	path string
	f    *os.File
	slot int64
	ino  uint64
}

// openSidecar creates (with the database file's permission bits) or opens
// the sidecar and takes the lifetime lock at slot. It returns (nil, nil)
// when the directory does not allow it: liveness then rests on pid and
// start time alone.
func openSidecar(dbPath string, mode os.FileMode, slot int64) (*sidecar, error) {
	p := dbPath + "-cleolease"
	for attempt := 0; attempt < 3; attempt++ {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, mode.Perm())
		if err != nil {
			if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return nil, nil
			}
			return nil, err
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: slot, Len: 1}
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock sidecar %s: %w", p, err)
		}
		// A peer may have unlinked the file between our open and our lock;
		// make sure the lock sits on the file the path names now.
		var a, b unix.Stat_t
		if unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(p, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino {
			return &sidecar{path: p, f: f, slot: slot, ino: uint64(a.Ino)}, nil
		}
		f.Close()
	}
	return nil, nil
}

// locked reports whether another process holds the write (liveness) lock
// on byte slot. A read-lock probe conflicts only with write locks, so it
// works on a read-only descriptor too.
func (s *sidecar) locked(slot int64) (bool, error) {
	return s.conflict(slot, unix.F_RDLCK)
}

// lockedBytes counts the bytes of the n from start on which another open
// file description holds a lock, up to limit. F_OFD_GETLK reports one
// conflicting lock, not necessarily the lowest: the range is bisected, so
// a count costs about 2·log2(n) tests per locked byte.
func (s *sidecar) lockedBytes(start, n int64, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	w, err := s.rangeLocked(start, n)
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

// rangeLocked reports whether another process holds any lock on the n
// bytes from start (waiters announce themselves with shared locks).
func (s *sidecar) rangeLocked(start, n int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: start, Len: n}
	if err := unix.FcntlFlock(s.f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

func (s *sidecar) conflict(slot int64, typ int16) (bool, error) {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: slot, Len: 1}
	if err := unix.FcntlFlock(s.f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

// setLock takes (on) or drops (off) a shared lock on byte slot.
func (s *sidecar) setLock(slot int64, on bool) error {
	typ := int16(unix.F_UNLCK)
	if on {
		typ = unix.F_RDLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: slot, Len: 1}
	return unix.FcntlFlock(s.f.Fd(), unix.F_OFD_SETLK, &lk)
}

// ticketOffset holds the sidecar's arrival counter (8 bytes, little
// endian), guarded by a blocking OFD write lock on its own bytes.
const ticketOffset = 16

// nextTicket returns the next arrival number of this file: a counter in the
// sidecar, so a waiter takes its place in line the moment it arrives, even
// while a holder's transaction keeps SQLite's write lock and the queue row
// cannot be written yet. 0 when it cannot be read.
func (s *sidecar) nextTicket() int64 {
	// Non-blocking attempts for up to ~10 ms: a peer stopped (SIGSTOP)
	// inside this few-microsecond section must not stall everyone; without
	// a ticket the waiter falls back to the queue's own order.
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: ticketOffset, Len: 8}
	for i := 0; unix.FcntlFlock(s.f.Fd(), unix.F_OFD_SETLK, &lk) != nil; i++ {
		if i == 200 {
			return 0
		}
		time.Sleep(50 * time.Microsecond)
	}
	defer func() {
		lk.Type = unix.F_UNLCK
		unix.FcntlFlock(s.f.Fd(), unix.F_OFD_SETLK, &lk)
	}()
	var b [8]byte
	if n, err := s.f.ReadAt(b[:], ticketOffset); err != nil && n != 8 {
		b = [8]byte{}
	}
	t := int64(binary.LittleEndian.Uint64(b[:])) + 1
	binary.LittleEndian.PutUint64(b[:], uint64(t))
	if _, err := s.f.WriteAt(b[:], ticketOffset); err != nil {
		return 0
	}
	return t
}

// openSidecarReadOnly opens an existing sidecar to test locks, taking
// none: (nil, nil) when there is no sidecar.
func openSidecarReadOnly(dbPath string) (*sidecar, error) {
	p := dbPath + "-cleolease"
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	return &sidecar{path: p, f: f, ino: uint64(st.Ino)}, nil
}

// close drops the lifetime lock and removes the sidecar when no other
// process holds any lock on it.
func (s *sidecar) close() error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if unix.FcntlFlock(s.f.Fd(), unix.F_OFD_SETLK, &lk) == nil {
		// Nobody else holds a byte of it: safe to remove. A process that
		// opens it right now and locks the unlinked inode is still judged
		// correctly by pid and start time.
		os.Remove(s.path)
	}
	return s.f.Close()
}

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

// probe judges whether h is alive, strongest evidence first.
func (e *Engine) probe(h holder) verdict { return probeHolder(e.holderID, e.side, h) }

// probeHolder is probe for a process whose own holder id is self, seeing
// the sidecar side (nil when there is none).
func probeHolder(self string, side *sidecar, h holder) verdict {
	if h.ID == self {
		return verdict{true, "this process"}
	}
	parts := strings.Split(h.Start, "/")
	if h.Slot > 0 && side != nil {
		held, err := side.locked(h.Slot)
		if err == nil && held {
			return verdict{true, "liveness lock held"}
		}
		// The holder recorded which sidecar it locked: if it is the one we
		// see, a missing lock proves the process is gone.
		if err == nil && len(parts) == 4 && parts[3] == strconv.FormatUint(side.ino, 10) {
			return verdict{false, "liveness lock released"}
		}
	}
	if h.PID <= 0 || h.PID > 1<<22 {
		return verdict{false, "no such pid " + strconv.FormatInt(h.PID, 10)}
	}
	pid := strconv.FormatInt(h.PID, 10)
	if h.Start != "" {
		if len(parts) < 3 {
			return verdict{false, "unreadable holder_start"}
		}
		if parts[0] != bootID() {
			return verdict{false, "holder from another boot"}
		}
		if parts[1] != pidNamespace("self") {
			// Its pid means nothing here and its lock is gone.
			return verdict{false, "liveness lock released (other pid namespace)"}
		}
		st := startTime(pid)
		switch {
		case st == "":
			return verdict{false, "pid " + pid + " exited"}
		case st != parts[2]:
			return verdict{false, "pid " + pid + " reused by another process"}
		}
		return verdict{true, "pid " + pid + " running (no liveness lock)"}
	}
	if err := unix.Kill(int(h.PID), 0); errors.Is(err, unix.ESRCH) {
		return verdict{false, "pid " + pid + " exited"}
	}
	return verdict{true, "pid " + pid + " exists"}
}
