package lease

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// fakeOS is the operating system shared by engines of one test process
// that each play a process of their own (osSeams), without the
// simulation's scheduler (sim_os_test.go): lifetime locks held while an
// engine is open, want announcements, arrival tickets, and doorbells that
// deliver each datagram at once, unless the test's filter drops it. A
// test orders the engines' steps with their fault hooks.
type fakeOS struct {
	mu     sync.Mutex
	wants  map[[2]int64]bool    // (lane's want base, slot) announced
	alive  map[int64]bool       // slots whose lifetime lock is held
	bells  map[string]*fakeBell // by holder id
	ticket int64
	// drop, when set, drops the datagram msg from one holder id to
	// another (a lost datagram).
	drop func(from, to string, msg []byte) bool
}

func newFakeOS() *fakeOS {
	return &fakeOS{wants: map[[2]int64]bool{}, alive: map[int64]bool{}, bells: map[string]*fakeBell{}}
}

// open opens an engine on path as the process whose holder id is id,
// with Linger 0 unless mod says otherwise; the engine closes at the end
// of the test. recvFails makes its doorbell's first Recv calls fail.
func (o *fakeOS) open(t *testing.T, path, id string, recvFails int, mod func(*Options)) *Engine {
	t.Helper()
	opts := Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour}
	if mod != nil {
		mod(&opts)
	}
	seams := osSeams{
		holderID: id, pid: int64(os.Getpid()),
		openLocks: func(string, os.FileMode, int64) (platform.Locks, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.alive[slotFor(id)] = true
			return &fakeLocks{o: o, slot: slotFor(id)}, nil
		},
		listenBell: func(string, string, platform.FileID) (platform.Bell, error) {
			b := &fakeBell{o: o, id: id, ch: make(chan []byte, 64), done: make(chan struct{}), fails: recvFails}
			o.mu.Lock()
			defer o.mu.Unlock()
			o.bells[id] = b
			return b, nil
		},
		watchFiles: func(string, string, func()) (platform.FileWatch, error) { return nil, platform.ErrUnsupported },
		watchExit:  func(int64, func()) (func(), error) { return nil, platform.ErrUnsupported },
	}
	e, err := openWith(context.Background(), opts, seams)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// send delivers msg to id's doorbell as if from had sent it, unless the
// filter drops it; it reports whether the datagram reached the socket.
func (o *fakeOS) send(from, to string, msg []byte) bool {
	o.mu.Lock()
	b, drop := o.bells[to], o.drop
	o.mu.Unlock()
	if b == nil {
		return false
	}
	if drop != nil && drop(from, to, msg) {
		return true // lost on the way: the sender cannot tell
	}
	select {
	case b.ch <- append([]byte(nil), msg...):
		return true
	default:
		return false // a full socket
	}
}

// setDrop installs the filter of lost datagrams (nil: none).
func (o *fakeOS) setDrop(f func(from, to string, msg []byte) bool) {
	o.mu.Lock()
	o.drop = f
	o.mu.Unlock()
}

// fakeLocks is platform.Locks of one engine of a fakeOS.
type fakeLocks struct {
	o    *fakeOS
	slot int64
}

func (l *fakeLocks) Slot() int64       { return l.slot }
func (l *fakeLocks) Mark() string      { return "fake" }
func (l *fakeLocks) WatchPath() string { return "" }

func (l *fakeLocks) Close() error {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	delete(l.o.alive, l.slot)
	for k := range l.o.wants {
		if k[1] == l.slot {
			delete(l.o.wants, k)
		}
	}
	return nil
}

func (l *fakeLocks) Probe(slot int64, mark string) platform.Proof {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	switch {
	case mark != "fake":
		return platform.Unknown
	case l.o.alive[slot]:
		return platform.Held
	}
	return platform.Released
}

func (l *fakeLocks) SetWant(base int64, on bool) error {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	if on {
		l.o.wants[[2]int64{base, l.slot}] = true
	} else {
		delete(l.o.wants, [2]int64{base, l.slot})
	}
	return nil
}

func (l *fakeLocks) Wants(base, slot int64) (bool, error) {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	return l.o.wants[[2]int64{base, slot}], nil
}

func (l *fakeLocks) AnyWants(base int64) (bool, error) {
	n, err := l.CountWants(base, 1)
	return n > 0, err
}

func (l *fakeLocks) CountWants(base int64, limit int) (int, error) {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	n := 0
	for k := range l.o.wants {
		if k[0] == base && k[1] != l.slot && n < limit {
			n++
		}
	}
	return n, nil
}

func (l *fakeLocks) NextTicket() int64 {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	l.o.ticket++
	return l.o.ticket
}

// fakeBell is platform.Bell of one engine of a fakeOS; its first fails
// Recv calls fail (errRecvFault), as a socket error would.
type fakeBell struct {
	o     *fakeOS
	id    string
	ch    chan []byte
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	fails int
}

var errRecvFault = errors.New("fake: receive failed")

func (b *fakeBell) MaxDatagram() int { return 60 << 10 }

func (b *fakeBell) Send(to string, msg []byte) error {
	if !b.o.send(b.id, to, msg) {
		return errors.New("fake: not delivered")
	}
	return nil
}

func (b *fakeBell) Recv(buf []byte) (int, error) {
	b.mu.Lock()
	fail := b.fails > 0
	if fail {
		b.fails--
	}
	b.mu.Unlock()
	if fail {
		return 0, errRecvFault
	}
	select {
	case msg := <-b.ch:
		return copy(buf, msg), nil
	case <-b.done:
		return 0, errors.New("fake: bell closed")
	}
}

func (b *fakeBell) Close() error {
	b.once.Do(func() { close(b.done) })
	return nil
}
