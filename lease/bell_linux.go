//go:build linux

package lease

import (
	"os"
	"sync"

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
}

func newDoorbell(side *sidecar) *doorbell {
	b := &doorbell{side: side, ch: make(chan struct{}), done: make(chan struct{})}
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
	b.f = os.NewFile(uintptr(fd), "inotify:"+side.path)
	go b.loop()
	return b
}

func (b *doorbell) loop() {
	defer close(b.done)
	buf := make([]byte, 4096)
	for {
		if _, err := b.f.Read(buf); err != nil {
			return
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

// ring tells every process watching the sidecar (this one included).
func (b *doorbell) ring() {
	if b.side != nil {
		b.side.f.WriteAt([]byte{1}, 0)
	}
}

func (b *doorbell) close() {
	if b.f != nil {
		b.f.Close()
	}
	<-b.done
}
