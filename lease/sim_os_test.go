package lease

import (
	"errors"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// The simulated operating system of sim_test.go: every call an engine
// makes into its OS seams (osSeams) — liveness locks, want announcements,
// arrival tickets, datagrams — and every lease statement (the fault hook)
// parks at a gate until the simulation's scheduler lets it go, so that the
// scheduler decides the order in which the engines' steps happen.

// errSimKilled is what every gate of a killed (or stopped) process returns.
var errSimKilled = errors.New("sim: process killed")

// simGate is one goroutine of a simulated process parked before a step.
type simGate struct {
	p      *simProc
	op     string
	seq    int64
	resume chan error
}

// simProc is one simulated process: an engine with its own holder id,
// liveness lock, doorbell and clock, and the worker that writes under it.
type simProc struct {
	idx, gen int
	id       string // holder id
	pid      int64
	slot     int64
	dead     bool // killed (or the run is over): every gate fails
	paused   bool // stopped: its gates are not released
	inbox    chan []byte
	closed   bool // inbox closed
	eng      *Engine
	clock    *simClock
	breaking bool // a Break of this process is in flight
	done     chan struct{}
}

// simOS is the shared state of the simulated processes' OS: who holds
// which lock, who wants which lane, the arrival counter, the datagrams in
// flight and the parked goroutines. Its mutex is held only briefly, never
// across a gate.
type simOS struct {
	mu       sync.Mutex
	seq      int64
	parked   []*simGate
	procs    []*simProc // by index; the current generation
	operator *simProc   // the process that breaks lanes (no worker)
	wants    map[[2]int64]bool
	ticket   int64
	inflight []simDatagram
	dgSeq    int64
}

// simDatagram is a datagram sent and not yet delivered.
type simDatagram struct {
	seq      int64
	from, to string
	msg      []byte
}

func newSimOS() *simOS { return &simOS{wants: map[[2]int64]bool{}} }

// gate parks the calling goroutine of p before op until the scheduler
// releases it; it returns the error the scheduler injects (or
// errSimKilled once p is dead).
func (o *simOS) gate(p *simProc, op string) error {
	o.mu.Lock()
	if p.dead {
		o.mu.Unlock()
		return errSimKilled
	}
	o.seq++
	g := &simGate{p: p, op: op, seq: o.seq, resume: make(chan error, 1)}
	o.parked = append(o.parked, g)
	o.mu.Unlock()
	return <-g.resume
}

// runnable lists the parked gates of processes that are not stopped, in
// a deterministic order.
func (o *simOS) runnable() []*simGate {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*simGate
	for _, g := range o.parked {
		if !g.p.paused {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.p.idx != b.p.idx {
			return a.p.idx < b.p.idx
		}
		if a.op != b.op {
			return a.op < b.op
		}
		return a.seq < b.seq
	})
	return out
}

// release lets g go on with err.
func (o *simOS) release(g *simGate, err error) {
	o.mu.Lock()
	for i, x := range o.parked {
		if x == g {
			o.parked = append(o.parked[:i], o.parked[i+1:]...)
			break
		}
	}
	o.mu.Unlock()
	g.resume <- err
}

// kill ends process p as the kernel would: its locks and wants go, its
// socket closes, and every parked or later step of it fails.
func (o *simOS) kill(p *simProc) {
	o.mu.Lock()
	p.dead = true
	var mine []*simGate
	rest := o.parked[:0]
	for _, g := range o.parked {
		if g.p == p {
			mine = append(mine, g)
		} else {
			rest = append(rest, g)
		}
	}
	o.parked = rest
	for k := range o.wants {
		if k[1] == p.slot {
			delete(o.wants, k)
		}
	}
	if !p.closed {
		p.closed = true
		close(p.inbox)
	}
	o.mu.Unlock()
	for _, g := range mine {
		g.resume <- errSimKilled
	}
}

// isDead reports whether p was killed.
func (o *simOS) isDead(p *simProc) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return p.dead
}

// bySlot and byID find the live process of a slot or holder id.
func (o *simOS) bySlot(slot int64) *simProc {
	for _, p := range append(o.procs, o.operator) {
		if p != nil && p.slot == slot {
			return p
		}
	}
	return nil
}

func (o *simOS) byID(id string) *simProc {
	for _, p := range append(o.procs, o.operator) {
		if p != nil && p.id == id {
			return p
		}
	}
	return nil
}

// deliver hands datagram i to its addressee, if it still listens.
func (o *simOS) deliver(i int, drop bool) simDatagram {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.inflight[i]
	o.inflight = append(o.inflight[:i], o.inflight[i+1:]...)
	if drop {
		return d
	}
	if p := o.byID(d.to); p != nil && !p.closed {
		select {
		case p.inbox <- d.msg:
		default: // a full socket buffer drops it
		}
	}
	return d
}

// inject puts a datagram in flight as if from would have sent it.
func (o *simOS) inject(from, to string, msg []byte) {
	o.mu.Lock()
	o.dgSeq++
	o.inflight = append(o.inflight, simDatagram{seq: o.dgSeq, from: from, to: to, msg: msg})
	o.mu.Unlock()
}

// seams are the OS pieces of process p.
func (o *simOS) seams(p *simProc) osSeams {
	return osSeams{
		holderID: p.id, pid: p.pid,
		openLocks: func(string, os.FileMode, int64) (platform.Locks, error) {
			return &simLocks{o: o, p: p}, nil
		},
		listenBell: func(string, string, platform.FileID) (platform.Bell, error) {
			return &simBell{o: o, p: p}, nil
		},
		watchFiles: func(string, string, func()) (platform.FileWatch, error) { return nil, platform.ErrUnsupported },
		watchExit:  func(int64, func()) (func(), error) { return nil, platform.ErrUnsupported },
	}
}

// simLocks is platform.Locks for process p: a lock is held while its
// process lives.
type simLocks struct {
	o *simOS
	p *simProc
}

func (l *simLocks) Slot() int64       { return l.p.slot }
func (l *simLocks) Mark() string      { return "sim" }
func (l *simLocks) WatchPath() string { return "" }
func (l *simLocks) Close() error {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	for k := range l.o.wants {
		if k[1] == l.p.slot {
			delete(l.o.wants, k)
		}
	}
	return nil
}

func (l *simLocks) Probe(slot int64, mark string) platform.Proof {
	if l.o.gate(l.p, "os/probe") != nil {
		return platform.Unknown
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	q := l.o.bySlot(slot)
	switch {
	case mark != "sim":
		return platform.Unknown
	case q == nil || q.dead:
		return platform.Released
	}
	return platform.Held
}

func (l *simLocks) SetWant(base int64, on bool) error {
	if err := l.o.gate(l.p, "os/setwant"); err != nil {
		return err
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	if on {
		l.o.wants[[2]int64{base, l.p.slot}] = true
	} else {
		delete(l.o.wants, [2]int64{base, l.p.slot})
	}
	return nil
}

func (l *simLocks) Wants(base, slot int64) (bool, error) {
	if err := l.o.gate(l.p, "os/wants"); err != nil {
		return false, err
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	return l.o.wants[[2]int64{base, slot}], nil
}

func (l *simLocks) AnyWants(base int64) (bool, error) {
	n, err := l.CountWants(base, 1)
	return n > 0, err
}

func (l *simLocks) CountWants(base int64, limit int) (int, error) {
	if err := l.o.gate(l.p, "os/anywants"); err != nil {
		return 0, err
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	n := 0
	for k := range l.o.wants {
		if k[0] == base && k[1] != l.p.slot && n < limit {
			n++
		}
	}
	return n, nil
}

func (l *simLocks) NextTicket() int64 {
	if l.o.gate(l.p, "os/ticket") != nil {
		return 0
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	l.o.ticket++
	return l.o.ticket
}

// simBell is platform.Bell for process p: datagrams wait in flight until
// the scheduler delivers, drops or duplicates them.
type simBell struct {
	o *simOS
	p *simProc
}

func (b *simBell) MaxDatagram() int { return 60 << 10 }

func (b *simBell) Send(to string, msg []byte) error {
	if err := b.o.gate(b.p, "os/send"); err != nil {
		return err
	}
	b.o.mu.Lock()
	q := b.o.byID(to)
	b.o.mu.Unlock()
	if q == nil || q.dead {
		return errors.New("sim: connection refused")
	}
	b.o.inject(b.p.id, to, append([]byte(nil), msg...))
	return nil
}

func (b *simBell) Recv(buf []byte) (int, error) {
	msg, ok := <-b.p.inbox
	if !ok {
		return 0, errors.New("sim: bell closed")
	}
	return copy(buf, msg), nil
}

func (b *simBell) Close() error {
	b.o.mu.Lock()
	defer b.o.mu.Unlock()
	if !b.p.closed {
		b.p.closed = true
		close(b.p.inbox)
	}
	return nil
}

// simClock is a process's wall clock: the simulation's time plus a skew
// the scheduler steps.
type simClock struct{ skew atomic.Int64 }

func (c *simClock) Now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }
