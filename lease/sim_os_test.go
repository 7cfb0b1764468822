package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// The simulated operating system of sim_test.go: every call an engine
// makes into its OS seams (osSeams) — liveness locks, want announcements,
// arrival tickets, datagrams — and every lease statement (the fault hook)
// parks at a gate until the simulation's scheduler lets it go, so that the
// scheduler decides the order in which the engines' steps happen.
//
// The sidecar (the file the liveness locks, want bytes and arrival
// counter live in) has generations: the scheduler may remove it while
// processes run, and a process that opens afterwards creates and locks a
// new one (simOS.sidecar). A process's locks, wants and tickets are on the
// generation it opened; a probe of a lock on another generation answers
// Unknown (the prober cannot see that file), as does a probe the
// scheduler makes fail. The pid and start-time path (lookupProcess)
// answers from the simulated world (simOS.lookup); a process may run in
// another pid namespace (simProc.pidns), which its holder_start records.

// errSimKilled is what every gate of a killed (or stopped) process returns.
var errSimKilled = errors.New("sim: process killed")

// errSimUnknown, injected at an os/probe gate, makes the probe answer
// Unknown (the lock could not be tested) for whatever process it tests.
var errSimUnknown = errors.New("sim: lock cannot be tested")

// errSimRecv is what a simulated bell's Recv returns once when the
// scheduler makes it fail (simOS.failRecv).
var errSimRecv = errors.New("sim: recv failed")

// simGate is one goroutine of a simulated process parked before a step.
type simGate struct {
	p      *simProc
	op     string
	seq    int64
	resume chan error
}

// simProc is one simulated process: an engine with its own holder id,
// liveness lock, doorbell and clock, and the worker that writes under it.
// Its mutable fields are guarded by simOS.mu.
type simProc struct {
	idx, gen int
	id       string // holder id
	pid      int64
	slot     int64
	// gens are the sidecar generations it holds its lifetime lock in,
	// oldest first: the one it opened, and those it moved to (Refresh).
	// It announces wants and takes tickets in the newest (sidecar), and
	// tests every one.
	gens    []int
	sidecar int
	pidns   string // "": the test process's pid namespace; else another one
	busy    bool   // its worker writes in a tight loop (no pause between holds)
	slow    bool   // its worker's holds take 5 to 30 ms
	dead    bool   // killed (or the run is over): every gate fails
	paused  bool   // stopped: its gates are not released
	inbox   chan []byte
	closed  bool // inbox closed
	// bound: its engine's doorbell listens (a datagram sent to it while
	// not is refused, as by a socket nobody bound); locked: an engine of
	// it is open and holds its lifetime lock (between a Close and the
	// next Open of a process that reopens its engine, a probe finds the
	// lock released).
	bound, locked bool
	eng           *Engine
	clock         *simClock
	breaking      bool // a Break of this process is in flight
	done          chan struct{}

	// What its worker does (the liveness checker's view, simlive_test.go).
	cancel context.CancelFunc // ends the Acquire in progress (nil: none)
	// found is the waiter whose want byte this process's engine last found
	// held (Wants), until a commit of its passes: the waiter a hand-off
	// in progress may be granting the lane to (see simOS.endangered).
	found *simProc
	// endangered: its Acquire was cancelled while a hand-off that found
	// it waiting was about to commit (simWorld.cancel).
	endangered bool
	wanting    bool      // inside Acquire, or between its retries
	holding    bool      // between Acquire's return and Release
	starve     simStarve // its current wait, while wanting

	// Its extra writers (simConfig.writers: help): how many there are,
	// how many are inside Acquire and how many hold the lane.
	writers, helpWanting, helpHolding int
	// prevHigh is the highest epoch its earlier engines saw or issued
	// (simConfig.reopen): what a reopened engine no longer remembers.
	prevHigh int64
}

// engine is p's current engine (a process that reopens replaces it).
func (p *simProc) engine() *Engine {
	simEngineMu.Lock()
	defer simEngineMu.Unlock()
	return p.eng
}

// setEngine makes eng p's current engine.
func (p *simProc) setEngine(eng *Engine) {
	simEngineMu.Lock()
	defer simEngineMu.Unlock()
	p.eng = eng
}

// simEngineMu guards every simProc's eng (a leaf lock: the checks read
// it while holding simOS.mu).
var simEngineMu sync.Mutex

// simOS is the shared state of the simulated processes' OS: who holds
// which lock, who wants which lane, the arrival counter, the datagrams in
// flight and the parked goroutines. Its mutex is held only briefly, never
// across a gate.
type simOS struct {
	holes    holes // put back in every engine (simConfig.holes)
	mu       sync.Mutex
	seq      int64
	parked   []*simGate
	procs    []*simProc // by index; the current generation
	operator *simProc   // the process that breaks lanes (no worker)
	everyone map[string]*simProc
	byPID    map[int64]*simProc
	sidecar  int              // the sidecar's current generation (a process opening now locks it)
	wants    map[simWant]bool // want bytes held
	tickets  map[int]int64    // each generation's arrival counter
	// turns is each sidecar generation's write turn: the open file
	// (simLocks) that holds it (platform.Turn; the kernel drops it when
	// its process dies or the file closes).
	turns    map[int]*simLocks
	inflight []simDatagram
	dgSeq    int64
	arrived  chan struct{} // a goroutine of a running process parked at a gate
	// exitWatches are the exit watches (watchExit) by pid, each by its id.
	exitWatches map[int64]map[int64]func()
	watchSeq    int64
}

// simWant is one want byte: a slot of a lane's want region (base) in one
// generation of the sidecar.
type simWant struct {
	gen        int
	base, slot int64
}

// simDatagram is a datagram sent and not yet delivered.
type simDatagram struct {
	seq      int64
	from, to string
	msg      []byte
	until    time.Time // held back (delayed) until then
}

// kind is the datagram's kind as the trace names it: its first byte.
func (d simDatagram) kind() byte {
	if len(d.msg) == 0 {
		return '-'
	}
	return d.msg[0]
}

func newSimOS() *simOS {
	return &simOS{wants: map[simWant]bool{}, tickets: map[int]int64{}, turns: map[int]*simLocks{}, everyone: map[string]*simProc{}, byPID: map[int64]*simProc{},
		arrived: make(chan struct{}, 1), exitWatches: map[int64]map[int64]func(){}}
}

// add records a new process (a new generation of a worker's process, or
// the operator) on the sidecar's current generation.
func (o *simOS) add(p *simProc) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p.sidecar, p.gens = o.sidecar, []int{o.sidecar}
	o.everyone[p.id] = p
	o.byPID[p.pid] = p
}

// simMark is the mark of the sidecar generation gen (platform.Liveness.Mark).
func simMark(gen int) string { return "sim.g" + strconv.Itoa(gen) }

// parseSimMark is the generation a mark names (false: not a sidecar's).
func parseSimMark(mark string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(mark, "sim.g"))
	return n, err == nil && strings.HasPrefix(mark, "sim.g")
}

// simIdentity is holder_start (boot/pidns/start/mark/uid) with the pid
// namespace of a simulated process: pidns "" keeps the test process's
// own. (Its start time stays the test process's: the simulated pids are
// never reused, and an engine that moves to a new sidecar writes its
// holder_start again from the process's identity.)
func simIdentity(start, pidns string) string {
	parts := strings.Split(start, "/")
	if len(parts) < 3 || pidns == "" {
		return start
	}
	parts[1] = "sim-pidns:" + pidns
	return strings.Join(parts, "/")
}

// lookup is lookupProcess in the simulated world: a simulated process's
// pid runs while it lives (with the test process's start time, which its
// holder_start records); any other pid is gone.
func (o *simOS) lookup(pid int64, _ string) (platform.ProcState, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.byPID[pid]
	if p == nil || p.dead {
		return platform.ProcDead, ""
	}
	return platform.ProcAlive, strings.Split(procIdentity(), "/")[2]
}

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
	if !p.paused {
		select {
		case o.arrived <- struct{}{}: // ends the scheduler's sleep (see sleep)
		default:
		}
	}
	o.mu.Unlock()
	return <-g.resume
}

// sleep lets up to d of simulated time pass, and less when a goroutine of
// a process that is not stopped parks at a gate meanwhile (a timer woke
// it): the time then stops there, so that no other timer of that process
// fires while it waits at the gate (the engine's selects would then find
// several channels ready, and the Go runtime would choose among them at
// random: a seed would no longer replay). It returns the time that
// passed.
func (o *simOS) sleep(d time.Duration) time.Duration {
	select {
	case <-o.arrived:
	default:
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-o.arrived:
	}
	return time.Since(start)
}

// runnable lists the parked gates of processes that are not stopped, in
// a deterministic order.
func (o *simOS) runnable() []*simGate {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*simGate
	for _, g := range o.parked {
		if !g.p.paused && !o.turnBlockedLocked(g) {
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
	if strings.HasSuffix(g.op, "commit") {
		g.p.found = nil
	}
	o.mu.Unlock()
	g.resume <- err
}

// endangered lists the processes inside Acquire that a hand-off in
// progress may be granting the lane to: another process found their want
// byte held and is parked before its commit (a hand-off's, a claim's
// that hands a free lane to the head of the queue, or a data commit that
// carries a Pass). A waiter that gives up there meets the grant late (the
// window of issue 28's first hole).
func (o *simOS) endangered() []*simProc {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*simProc
	for _, g := range o.parked {
		q := g.p.found
		if q == nil || q.dead || q.paused || q.cancel == nil || !(strings.HasSuffix(g.op, "commit") || g.op == "lease/pass") {
			continue
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].idx < out[j].idx })
	return out
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
	o.dropWantsLocked(p)
	for gen, l := range o.turns {
		if l.p == p {
			delete(o.turns, gen)
		}
	}
	if !p.closed {
		p.closed = true
		close(p.inbox)
	}
	watches := o.exitWatches[p.pid]
	delete(o.exitWatches, p.pid)
	ids := slices.Sorted(maps.Keys(watches))
	o.mu.Unlock()
	for _, g := range mine {
		g.resume <- errSimKilled
	}
	for _, id := range ids {
		watches[id]() // (in watch order: the seed replays)
	}
}

// dropWantsLocked drops every want byte of p, on every generation (the
// kernel drops a dead process's locks, and Close drops them all).
func (o *simOS) dropWantsLocked(p *simProc) {
	for k := range o.wants {
		if k.slot == p.slot {
			delete(o.wants, k)
		}
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

// deliverable lists the indexes in inflight of the datagrams not held
// back at now, oldest first.
func (o *simOS) deliverable(now time.Time) []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int
	for i, d := range o.inflight {
		if !d.until.After(now) {
			out = append(out, i)
		}
	}
	return out
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

// delay holds datagram i back until until.
func (o *simOS) delay(i int, until time.Time) simDatagram {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inflight[i].until = until
	return o.inflight[i]
}

// failRecv makes p's next Recv, after the datagrams already queued for
// it, return an error (a nil message in its inbox stands for it).
func (o *simOS) failRecv(p *simProc) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p.closed {
		return false
	}
	select {
	case p.inbox <- nil:
		return true
	default:
		return false
	}
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
		holderID: p.id, pid: p.pid, holes: o.holes,
		openLocks: func(string, os.FileMode, int64) (platform.Locks, error) {
			o.mu.Lock()
			p.locked = true
			o.mu.Unlock()
			return &simLocks{o: o, p: p}, nil
		},
		listenBell: func(string, string, platform.FileID) (platform.Bell, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			if p.closed && !p.dead { // a reopened engine's socket
				p.inbox, p.closed = make(chan []byte, 1024), false
			}
			p.bound = true
			return &simBell{o: o, p: p, inbox: p.inbox}, nil
		},
		watchFiles: func(string, string, func()) (platform.FileWatch, error) { return nil, platform.ErrUnsupported },
		watchExit:  o.watchExit,
	}
}

// watchExit is platform.WatchExit in the simulated world: exited is
// called when the process of pid is killed (at once if it is gone), until
// stop is called. (Without an exit watch, a waiter registered with a
// holder would poll every fallbackPoll instead of registeredPoll.)
func (o *simOS) watchExit(pid int64, exited func()) (stop func(), err error) {
	o.mu.Lock()
	q := o.byPID[pid]
	if q == nil || q.dead {
		o.mu.Unlock()
		exited()
		return func() {}, nil
	}
	o.watchSeq++
	id := o.watchSeq
	if o.exitWatches[pid] == nil {
		o.exitWatches[pid] = map[int64]func(){}
	}
	o.exitWatches[pid][id] = exited
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		delete(o.exitWatches[pid], id)
		o.mu.Unlock()
	}, nil
}

// simLocks is platform.Locks for process p: a lifetime lock is held while
// its process lives, in each sidecar generation it locked (p.gens). It
// also follows a replaced sidecar (platform.Follower, issue 28 item 2:
// Refresh and Sees), as the platform's Locks do: it takes its lock in
// the new generation too, announces its wants there, and keeps the old.
// (An engine that does not look for the Follower never calls them.)
type simLocks struct {
	o *simOS
	p *simProc
}

func (l *simLocks) Slot() int64 { return l.p.slot }

// Mark names the newest sidecar generation p's lock is in.
func (l *simLocks) Mark() string {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	return simMark(l.p.sidecar)
}

func (l *simLocks) WatchPath() string { return "" }
func (l *simLocks) Close() error {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	l.o.dropWantsLocked(l.p)
	for gen, h := range l.o.turns {
		if h == l {
			delete(l.o.turns, gen)
		}
	}
	l.p.locked = false
	return nil
}

// Probe tests the lock of slot in the generations p sees: Held when one
// of them shows the lock (its process lives and locked it there);
// Released when the generation mark names is one of them and shows none;
// Unknown when p sees no generation of the holder's (or the scheduler
// makes the test fail).
func (l *simLocks) Probe(slot int64, mark string) platform.Proof {
	if l.o.gate(l.p, "os/probe") != nil {
		return platform.Unknown
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	q := l.o.bySlot(slot)
	alive := q != nil && !q.dead && q.locked
	for _, g := range l.p.gens {
		if alive && slices.Contains(q.gens, g) {
			return platform.Held
		}
	}
	if gen, ok := parseSimMark(mark); ok && slices.Contains(l.p.gens, gen) {
		return platform.Released
	}
	return platform.Unknown // another file than those p sees
}

// SetWant announces p's want in its newest generation (and drops it from
// every one).
func (l *simLocks) SetWant(base int64, on bool) error {
	if err := l.o.gate(l.p, "os/setwant"); err != nil {
		return err
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	if on {
		l.o.wants[simWant{l.p.sidecar, base, l.p.slot}] = true
		return nil
	}
	for _, g := range l.p.gens {
		delete(l.o.wants, simWant{g, base, l.p.slot})
	}
	return nil
}

// Wants tests slot's want in every generation p sees.
func (l *simLocks) Wants(base, slot int64) (bool, error) {
	if err := l.o.gate(l.p, "os/wants"); err != nil {
		return false, err
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	for _, g := range l.p.gens {
		if l.o.wants[simWant{g, base, slot}] {
			l.p.found = l.o.bySlot(slot)
			return true, nil
		}
	}
	return false, nil
}

func (l *simLocks) AnyWants(base int64) (bool, error) {
	n, err := l.CountWants(base, 1)
	return n > 0, err
}

// CountWants counts the other slots that want the lane in any generation
// p sees.
func (l *simLocks) CountWants(base int64, limit int) (int, error) {
	if err := l.o.gate(l.p, "os/anywants"); err != nil {
		return 0, err
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	slots := map[int64]bool{}
	for k := range l.o.wants {
		if k.base == base && k.slot != l.p.slot && slices.Contains(l.p.gens, k.gen) {
			slots[k.slot] = true
		}
	}
	return min(len(slots), limit), nil
}

// NextTicket takes the next ticket of p's newest sidecar generation (a
// new sidecar's counter starts again, unless a process that moved there
// raised it).
func (l *simLocks) NextTicket() int64 {
	if l.o.gate(l.p, "os/ticket") != nil {
		return 0
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	l.o.tickets[l.p.sidecar]++
	return l.o.tickets[l.p.sidecar]
}

// Refresh moves p to the sidecar's current generation when it is not
// there yet (platform.Follower): its lifetime lock there, its wants
// announced there, the counter raised to its newest one's.
func (l *simLocks) Refresh() (moved bool, err error) {
	if err := l.o.gate(l.p, "os/refresh"); err != nil {
		return false, err
	}
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	p, cur := l.p, l.o.sidecar
	if p.sidecar == cur {
		return false, nil
	}
	for k := range l.o.wants {
		if k.slot == p.slot && k.gen == p.sidecar {
			l.o.wants[simWant{cur, k.base, k.slot}] = true
		}
	}
	l.o.tickets[cur] = max(l.o.tickets[cur], l.o.tickets[p.sidecar])
	p.gens = append(p.gens, cur)
	p.sidecar = cur
	return true, nil
}

// Sees reports whether p sees the generation mark names
// (platform.Follower).
func (l *simLocks) Sees(_ int64, mark string) bool {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	gen, ok := parseSimMark(mark)
	return ok && slices.Contains(l.p.gens, gen)
}

// simBell is platform.Bell for process p: datagrams wait in flight until
// the scheduler delivers, drops or duplicates them.
type simBell struct {
	o     *simOS
	p     *simProc
	inbox chan []byte // p's inbox when this bell was bound
}

func (b *simBell) MaxDatagram() int { return 60 << 10 }

func (b *simBell) Send(to string, msg []byte) error {
	if err := b.o.gate(b.p, "os/send"); err != nil {
		return err
	}
	b.o.mu.Lock()
	q := b.o.byID(to)
	b.o.mu.Unlock()
	if q == nil || q.dead || !q.bound {
		return fmt.Errorf("sim: %w", syscall.ECONNREFUSED) // no socket bound
	}
	b.o.inject(b.p.id, to, append([]byte(nil), msg...))
	return nil
}

// Recv returns the next datagram delivered to p; a nil one stands for a
// failure of the socket (simOS.failRecv), returned once as an error.
func (b *simBell) Recv(buf []byte) (int, error) {
	msg, ok := <-b.inbox
	if !ok {
		return 0, errors.New("sim: bell closed")
	}
	if msg == nil {
		return 0, errSimRecv
	}
	return copy(buf, msg), nil
}

func (b *simBell) Close() error {
	b.o.mu.Lock()
	defer b.o.mu.Unlock()
	if b.p.inbox == b.inbox {
		b.p.bound = false
		if !b.p.closed {
			b.p.closed = true
			close(b.p.inbox)
		}
	}
	return nil
}

// String names p in traces and violations.
func (p *simProc) String() string { return fmt.Sprintf("p%d (%s)", p.idx, p.id) }

// describe is p as a start or restart shows it in the trace.
func (p *simProc) describe() string {
	s := fmt.Sprintf("p%d as %s (sidecar generation %d", p.idx, p.id, p.sidecar)
	if p.pidns != "" {
		s += ", another pid namespace"
	}
	if p.busy {
		s += ", busy"
	}
	if p.slow {
		s += ", slow"
	}
	return s + ")"
}

// simClock is a process's wall clock: the simulation's time plus a skew
// the scheduler steps.
type simClock struct{ skew atomic.Int64 }

func (c *simClock) Now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// Turn is the write turn of p's newest sidecar generation, held by this
// open file (platform.Turns).
func (l *simLocks) Turn() platform.Turn {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	return simTurn{l: l, gen: l.p.sidecar}
}

// simTurn is platform.Turn in the simulated world: a blocking Wait is a
// goroutine parked at the gate "os/turnwait", which the scheduler does not
// release while another open file holds the turn (turnBlockedLocked), so a
// process stopped while it holds the turn holds up every lane's writers.
type simTurn struct {
	l   *simLocks
	gen int
}

// Try is one atomic step of the kernel's: no gate (an engine opens before
// the scheduler runs, and its bootstrap takes the turn).
func (t simTurn) Try() (bool, error) {
	o := t.l.o
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.takeTurnLocked(t), nil
}

func (t simTurn) Wait() error {
	o := t.l.o
	for {
		if err := o.gate(t.l.p, "os/turnwait"); err != nil {
			return err
		}
		o.mu.Lock()
		ok := o.takeTurnLocked(t)
		o.mu.Unlock()
		if ok {
			return nil
		}
	}
}

func (t simTurn) Drop() error {
	o := t.l.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.turns[t.gen] == t.l {
		delete(o.turns, t.gen)
	}
	return nil
}

// takeTurnLocked gives t's open file the turn when nobody else holds it.
func (o *simOS) takeTurnLocked(t simTurn) bool {
	if h := o.turns[t.gen]; h != nil && h != t.l {
		return false
	}
	o.turns[t.gen] = t.l
	return true
}

// turnBlockedLocked reports whether g waits for a turn that another open
// file holds (the kernel would not wake it).
func (o *simOS) turnBlockedLocked(g *simGate) bool {
	if g.op != "os/turnwait" {
		return false
	}
	gen := g.p.sidecar
	h := o.turns[gen]
	return h != nil && h.p != g.p
}

// turnHolders names the process holding each generation's write turn, for
// a violation's report.
func (o *simOS) turnHolders() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, gen := range slices.Sorted(maps.Keys(o.turns)) {
		l := o.turns[gen]
		out = append(out, fmt.Sprintf("generation %d: p%d (dead %v, paused %v, closed %v)", gen, l.p.idx, l.p.dead, l.p.paused, l.p.closed))
	}
	if len(out) == 0 {
		return "free"
	}
	return strings.Join(out, ", ")
}

// turnStopped reports whether a stopped (paused, not dead) process holds
// a write turn.
func (o *simOS) turnStopped() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.turns {
		if l.p.paused && !l.p.dead {
			return true
		}
	}
	return false
}
