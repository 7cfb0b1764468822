//go:build linux

package lease

import (
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// doorbell wakes this process's waiters when something happened that may
// let one of them proceed, without a fixed sleep: the kernel reports
// (inotify) every write to the sidecar — a holder that hands a lane over
// rings by writing one byte at offset 0, a waiter that queues rings so a
// lingering holder hands over at once — and every close of it, which is
// how a crashed process's exit shows up. Waiters still poll at a bounded
// fallback period (5 ms) for what the kernel cannot report (another
// implementation's holders, network file systems).
type doorbell struct {
	side *sidecar
	f    *os.File // inotify descriptor, nil when unavailable
	mu   sync.Mutex
	ch   chan struct{}
	done chan struct{}

	// The database file itself is watched for a change of its link count
	// or name (renamed over, deleted), so the identity check needs a stat
	// only after such an event.
	dbWatch   int32 // watch descriptor of the database file; -1 if none
	dbChanged atomic.Bool

	// grantSlot is the liveness slot of the waiter the last hand-off was
	// made to (the 8 bytes at offset 0 of the sidecar); closes counts
	// closes of the sidecar (a process exited, perhaps by crashing). A
	// woken waiter reads the lease table only when the grant names it or a
	// process exited, so a hand-off costs one database read, not one per
	// waiter.
	grantSlot atomic.Int64
	closes    atomic.Int64
}

func newDoorbell(side *sidecar, dbPath string) *doorbell {
	b := &doorbell{side: side, ch: make(chan struct{}), done: make(chan struct{}), dbWatch: -1}
	if side == nil {
		close(b.done)
		return b
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		close(b.done)
		return b
	}
	if _, err := unix.InotifyAddWatch(fd, side.path, unix.IN_MODIFY|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		close(b.done)
		return b
	}
	if wd, err := unix.InotifyAddWatch(fd, dbPath, unix.IN_ATTRIB|unix.IN_MOVE_SELF|unix.IN_DELETE_SELF); err == nil {
		b.dbWatch = int32(wd)
	}
	b.f = os.NewFile(uintptr(fd), "inotify:"+side.path)
	go b.loop()
	return b
}

func (b *doorbell) loop() {
	defer close(b.done)
	buf := make([]byte, 4096)
	for {
		n, err := b.f.Read(buf)
		if err != nil {
			return
		}
		modified := false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				b.dbChanged.Store(true)
				b.closes.Add(1) // events were lost: everyone looks
				modified = true
			case ev.Wd == b.dbWatch:
				b.dbChanged.Store(true)
			case ev.Mask&unix.IN_CLOSE_WRITE != 0:
				b.closes.Add(1)
			case ev.Mask&unix.IN_MODIFY != 0:
				modified = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		if modified {
			var v [8]byte
			if _, err := b.side.f.ReadAt(v[:], 0); err == nil {
				b.grantSlot.Store(int64(binary.LittleEndian.Uint64(v[:])))
			}
		}
		b.wake()
	}
}

// wait returns a channel closed at the next ring after this call.
func (b *doorbell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *doorbell) wake() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// ringGrant tells the process whose liveness slot is slot (and wakes every
// process watching the sidecar) that a lane was handed to it.
func (b *doorbell) ringGrant(slot int64) {
	if b.side != nil {
		var v [8]byte
		binary.LittleEndian.PutUint64(v[:], uint64(slot))
		b.side.f.WriteAt(v[:], 0)
	}
}

// ringQueue tells holders that a waiter queued (byte 8 of the sidecar).
func (b *doorbell) ringQueue() {
	if b.side != nil {
		b.side.f.WriteAt([]byte{1}, 8)
	}
}

// watched reports whether rings reach this process (inotify works here).
func (b *doorbell) watched() bool { return b.f != nil }

func (b *doorbell) close() {
	if b.f != nil {
		b.f.Close()
	}
	<-b.done
}
