package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// writeTurn is this process's share of the file's write turn: a leased
// write transaction of any lane holds it from just before its BEGIN
// IMMEDIATE until its COMMIT or ROLLBACK, so that writers of different
// lanes (and the engine's own lease transactions) take SQLite's write
// lock one after another instead of meeting in SQLite's busy handler,
// which sleeps and polls and orders nobody.
//
// It has two parts. In the process, one goroutine at a time owns it (own).
// Across processes, the owner takes an exclusive kernel lock
// (platform.Turn: an OFD lock on a sidecar byte, a flock, LockFileEx),
// which belongs to the open file, so two goroutines of one process would
// never conflict on it — hence own. A blocking kernel wait cannot be
// interrupted, so at most one runs per process: an owner whose context
// ends leaves it behind, the next owner adopts it, and when it is granted
// with no owner waiting the lock is dropped at once. Where waiting
// processes announce themselves (platform.TurnQueue, Linux), one that
// finds the turn free while another waits queues behind that one first,
// so that a writer of a quiet lane is not overtaken at every commit of a
// busy one.
//
// Lock order: a lane's lease first, then the turn; nothing waits for a
// lane while it holds the turn (a claim inside the caller's transaction
// only tries it: Engine.TryTurn). A claim transaction that grants the lane
// to a writer about to begin keeps the turn for it (keep).
type writeTurn struct {
	own   chan struct{}        // capacity 1: full while a goroutine owns the turn
	locks func() platform.Turn // the kernel lock (nil result: none; in-process only)

	mu      sync.Mutex
	waiting bool       // a kernel wait is in flight
	wanted  bool       // an owner waits for that wait's result (got)
	got     chan error // the in-flight wait's result for the owner (capacity 1)
	closed  bool       // the engine closed: a late grant is dropped
	kept    *WriteTurn // a turn kept for this process's next writer (keep)
	keptEnd *time.Timer

	waits   atomic.Int64 // takes that waited for another process (stats)
	bypass  atomic.Int64 // takes that gave up and went on without the turn (stats)
	adopted atomic.Int64 // kernel waits one owner left and the next adopted (stats)
}

// errTurnClosed is a kernel wait's result when the engine closed while it
// ran (the owner goes on without the turn).
var errTurnClosed = errors.New("cleolease: the engine closed while waiting for the write turn")

// engineTurnLocal bounds how long the engine's own lease transactions wait
// for a goroutine of this process that owns the turn (go-sqlite3's default
// busy_timeout): past it they go on, polling SQLite's write lock as
// before, so that a lease transaction that the owner itself waits for
// never waits for the owner.
func engineTurnLocal() time.Duration { return 5 * time.Second }

// kernelTurn is the write turn of the engine's liveness files (nil without
// them: the turn is then the process's part only).
func (e *Engine) kernelTurn() platform.Turn {
	if e.locks == nil {
		return nil
	}
	return platform.TurnOf(e.locks)
}

func newWriteTurn(kernel func() platform.Turn) *writeTurn {
	return &writeTurn{own: make(chan struct{}, 1), locks: kernel, got: make(chan error, 1)}
}

// WriteTurn is one hold of the file's write turn (Engine.TakeTurn,
// Engine.TryTurn). End releases it; a nil *WriteTurn holds nothing.
type WriteTurn struct {
	t     *writeTurn
	k     platform.Turn // the kernel lock held (nil: the process's part only)
	ended atomic.Bool
}

// End releases the turn: the kernel lock, then the process's part. Later
// calls do nothing; any goroutine may call it (a transaction may end on
// another goroutine than the one that began it).
func (w *WriteTurn) End() {
	if w == nil || !w.ended.CompareAndSwap(false, true) {
		return
	}
	if w.k != nil {
		w.k.Drop()
	}
	<-w.t.own
}

// TakeTurn takes the file's write turn for one write transaction,
// honouring ctx. It waits at most local for another goroutine of this
// process that owns it, and at most cross (negative: no bound but ctx)
// for another process that holds it; past either bound (or when the
// kernel lock fails) it returns nil and a nil error: the write goes on
// without the turn and meets SQLite's busy handler as it would without
// cleolease. That keeps a goroutine whose transaction holds the turn and
// which then writes on another connection from waiting for itself. ctx's
// error when ctx ends first.
//
// local is called only when another goroutine owns the turn (the driver
// reads the connection's busy_timeout then, not on every write).
func (e *Engine) TakeTurn(ctx context.Context, local func() time.Duration, cross time.Duration) (*WriteTurn, error) {
	return e.turn.take(ctx, local, cross)
}

// TryTurn takes the write turn only if nobody holds it now, nor waits for
// it (nil otherwise): for a claim inside the caller's transaction, which
// must not wait unseen (InlineConfirmer).
func (e *Engine) TryTurn() *WriteTurn { return e.turn.try() }

func (t *writeTurn) try() *WriteTurn {
	if w := t.takeKept(); w != nil {
		return w
	}
	select {
	case t.own <- struct{}{}:
	default:
		return nil
	}
	k := t.locks()
	if k == nil {
		return &WriteTurn{t: t}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed && !t.waiting && !othersWait(k) {
		if ok, err := k.Try(); ok && err == nil {
			return &WriteTurn{t: t, k: k}
		}
	}
	<-t.own
	return nil
}

func (t *writeTurn) take(ctx context.Context, local func() time.Duration, cross time.Duration) (*WriteTurn, error) {
	if w := t.takeKept(); w != nil {
		return w, nil
	}
	var timer *time.Timer
	select {
	case t.own <- struct{}{}:
	default:
		timer = time.NewTimer(local())
		select {
		case t.own <- struct{}{}:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
			t.bypass.Add(1)
			return nil, nil
		}
	}
	k := t.locks()
	if k == nil {
		return &WriteTurn{t: t}, nil
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		<-t.own
		return nil, nil
	}
	if !t.waiting {
		// Take a free turn at once — unless another process waits for
		// it (platform.TurnQueue): then queue behind that one.
		ok, err := false, error(nil)
		if !othersWait(k) {
			ok, err = k.Try()
		}
		if ok && err == nil {
			t.mu.Unlock()
			return &WriteTurn{t: t, k: k}, nil
		}
		if err != nil {
			t.mu.Unlock()
			<-t.own
			t.bypass.Add(1)
			return nil, nil
		}
		t.waiting = true
		go t.wait(k)
	} else {
		t.adopted.Add(1)
	}
	t.wanted = true
	t.mu.Unlock()
	t.waits.Add(1)
	var bound <-chan time.Time // nil (never ready): no bound but ctx
	if cross >= 0 {
		timer = time.NewTimer(cross)
		defer timer.Stop()
		bound = timer.C
	}
	select {
	case err := <-t.got:
		if err != nil {
			<-t.own
			t.bypass.Add(1)
			return nil, nil
		}
		return &WriteTurn{t: t, k: k}, nil
	case <-ctx.Done():
		t.abandon(k)
		return nil, ctx.Err()
	case <-bound:
		t.abandon(k)
		t.bypass.Add(1)
		return nil, nil
	}
}

// othersWait reports whether another process announces that it waits for the
// turn k (false where the Turn cannot tell).
func othersWait(k platform.Turn) bool {
	q, ok := k.(platform.TurnQueue)
	if !ok {
		return false
	}
	w, err := q.Wanted()
	return err == nil && w
}

// wait is the one kernel wait of the process: its grant goes to the owner
// that wants it, or is dropped at once.
func (t *writeTurn) wait(k platform.Turn) {
	q, _ := k.(platform.TurnQueue)
	if q != nil {
		q.Yield()
		q.Announce(true)
	}
	err := k.Wait()
	if q != nil {
		q.Announce(false)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiting = false
	if t.wanted {
		// The owner waiting for it gets the result — unless the engine
		// closed meanwhile: then the grant is dropped and the owner goes
		// on without the turn (its lease transaction meets the closed
		// engine).
		t.wanted = false
		if t.closed && err == nil {
			k.Drop()
			err = errTurnClosed
		}
		t.got <- err
		return
	}
	if err == nil {
		k.Drop()
	}
}

// abandon gives up the owner's wait for the kernel lock: the wait stays in
// flight for the next owner, or a grant that has just arrived is dropped.
func (t *writeTurn) abandon(k platform.Turn) {
	t.mu.Lock()
	t.wanted = false
	select {
	case err := <-t.got:
		if err == nil {
			k.Drop()
		}
	default:
	}
	t.mu.Unlock()
	<-t.own
}

// keptFor is how long a turn kept after a claim waits for the writer it
// was kept for (keep): the claim's caller begins its transaction within
// microseconds; past it the turn is dropped for the other processes.
const keptFor = 2 * time.Millisecond

// keep keeps w, a turn whose transaction (a claim that granted the lane)
// has committed, for this process's next writer — the claim's caller,
// about to begin its own transaction — instead of dropping it and waiting
// for it again behind the other processes' writers. It is dropped when
// nobody takes it within keptFor.
func (t *writeTurn) keep(w *WriteTurn) {
	if w == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.kept != nil {
		w.End()
		return
	}
	t.kept = w
	t.keptEnd = time.AfterFunc(keptFor, func() {
		if w := t.takeKept(); w != nil {
			w.End()
		}
	})
}

// takeKept returns the kept turn, if any, now the caller's.
func (t *writeTurn) takeKept() *WriteTurn {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.kept
	if w != nil {
		t.kept = nil
		t.keptEnd.Stop()
	}
	return w
}

// close makes a grant that arrives after the engine closed drop itself
// (the kernel wait itself cannot be ended: it ends when the holder
// releases or dies, or goes with the file when the liveness files close).
func (t *writeTurn) close() {
	if w := t.takeKept(); w != nil {
		w.End()
	}
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
}
