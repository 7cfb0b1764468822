package lease

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// fakeTurn is a platform.Turn another process holds until the test
// releases it: Try fails while held, Wait blocks until release, and the
// calls are recorded in order.
type fakeTurn struct {
	mu       sync.Mutex
	held     bool          // another process holds the turn
	mine     bool          // this process holds it
	release  chan struct{} // closed when the other process drops it
	waiting  chan struct{} // closed when Wait starts blocking
	wanted   bool          // another process announces a wait (TurnQueue)
	calls    []string
	waitOnce sync.Once
}

func newFakeTurn(held bool) *fakeTurn {
	return &fakeTurn{held: held, release: make(chan struct{}), waiting: make(chan struct{})}
}

func (f *fakeTurn) log(c string) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func (f *fakeTurn) Try() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "try")
	if f.held {
		return false, nil
	}
	f.mine = true
	return true, nil
}

func (f *fakeTurn) Wait() error {
	f.log("wait")
	f.waitOnce.Do(func() { close(f.waiting) })
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held, f.mine = false, true
	return nil
}

func (f *fakeTurn) Drop() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "drop")
	f.mine = false
	return nil
}

func (f *fakeTurn) isMine() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mine
}

func (f *fakeTurn) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// queuedTurn adds the announcements of waiting processes.
type queuedTurn struct{ *fakeTurn }

func (q queuedTurn) Wanted() (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.wanted, nil
}
func (q queuedTurn) Yield() error { q.log("yield"); return nil }
func (q queuedTurn) Announce(on bool) error {
	if on {
		q.log("announce")
	} else {
		q.log("withdraw")
	}
	return nil
}

func never() time.Duration { return time.Hour }

// A free turn is taken without a kernel wait and dropped by End; a second
// End does nothing.
func TestWriteTurnFree(t *testing.T) {
	k := newFakeTurn(false)
	wt := newWriteTurn(func() platform.Turn { return k })
	h, err := wt.take(context.Background(), never, time.Hour)
	if err != nil || h == nil || !k.isMine() {
		t.Fatalf("take: %v, %v, mine %v", h, err, k.isMine())
	}
	h.End()
	h.End()
	if k.isMine() {
		t.Fatal("the kernel lock is held after End")
	}
	if got := k.recorded(); !slices.Equal(got, []string{"try", "drop"}) {
		t.Fatalf("calls %v; want try, drop", got)
	}
	// The process's part is free again.
	if h, _ := wt.take(context.Background(), never, time.Hour); h == nil {
		t.Fatal("the turn was not free again after End")
	} else {
		h.End()
	}
}

// A writer whose context ends while the kernel wait runs leaves the wait
// to the next writer, which gets the grant; there is only one wait.
func TestWriteTurnAbandonedWaitIsAdopted(t *testing.T) {
	k := newFakeTurn(true)
	wt := newWriteTurn(func() platform.Turn { return k })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		h, err := wt.take(ctx, never, time.Hour)
		if h != nil {
			h.End()
		}
		done <- err
	}()
	<-k.waiting
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("take after cancel: %v; want context.Canceled", err)
	}
	got := make(chan *WriteTurn)
	go func() {
		h, _ := wt.take(context.Background(), never, time.Hour)
		got <- h
	}()
	// The second writer must be waiting for the one wait before the
	// other process releases: it is, once it owns the process's part and
	// has marked itself as wanting the result.
	waitWanted(t, wt)
	close(k.release)
	h := <-got
	if h == nil || !k.isMine() {
		t.Fatalf("the adopting writer got %v (mine %v)", h, k.isMine())
	}
	h.End()
	if n := countOf(k.recorded(), "wait"); n != 1 {
		t.Fatalf("%d kernel waits; want 1", n)
	}
	if wt.adopted.Load() != 1 {
		t.Fatalf("adopted %d; want 1", wt.adopted.Load())
	}
}

// A grant that arrives when no writer wants it any more is dropped at
// once: the process never keeps the turn for nobody.
func TestWriteTurnLateGrantIsDropped(t *testing.T) {
	k := newFakeTurn(true)
	wt := newWriteTurn(func() platform.Turn { return k })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := wt.take(ctx, never, time.Hour)
		done <- err
	}()
	<-k.waiting
	cancel()
	<-done
	close(k.release)
	eventuallyTrue(t, func() bool { return countOf(k.recorded(), "drop") == 1 })
	if k.isMine() {
		t.Fatal("the late grant is still held")
	}
	wt.mu.Lock()
	waiting := wt.waiting
	wt.mu.Unlock()
	if waiting {
		t.Fatal("the wait is still marked in flight")
	}
}

// Past its bounds a writer goes on without the turn (nil, no error):
// another goroutine of the process that owns it (local), or another
// process that holds it (cross).
func TestWriteTurnBounds(t *testing.T) {
	k := newFakeTurn(false)
	wt := newWriteTurn(func() platform.Turn { return k })
	owner, _ := wt.take(context.Background(), never, time.Hour)
	h, err := wt.take(context.Background(), func() time.Duration { return 0 }, time.Hour)
	if h != nil || err != nil {
		t.Fatalf("local bound: %v, %v; want nil, nil", h, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := wt.take(ctx, never, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended context while another goroutine owns the turn: %v", err)
	}
	owner.End()

	k2 := newFakeTurn(true)
	wt2 := newWriteTurn(func() platform.Turn { return k2 })
	h, err = wt2.take(context.Background(), never, 0)
	if h != nil || err != nil {
		t.Fatalf("cross bound: %v, %v; want nil, nil", h, err)
	}
	if wt2.bypass.Load() != 1 {
		t.Fatalf("bypass %d; want 1", wt2.bypass.Load())
	}
	// The process's part was given back.
	select {
	case wt2.own <- struct{}{}:
		<-wt2.own
	default:
		t.Fatal("the process's part is still owned after the cross bound")
	}
	close(k2.release)
}

// Where waiting processes announce themselves, a writer that finds the
// turn free while another process waits does not take it: it yields to
// that one, announces itself, waits, and withdraws once granted.
func TestWriteTurnQueuesBehindAWaiter(t *testing.T) {
	k := newFakeTurn(false)
	k.wanted = true
	wt := newWriteTurn(func() platform.Turn { return queuedTurn{k} })
	got := make(chan *WriteTurn)
	go func() {
		h, _ := wt.take(context.Background(), never, time.Hour)
		got <- h
	}()
	<-k.waiting
	close(k.release)
	h := <-got
	if h == nil {
		t.Fatal("no turn")
	}
	h.End()
	if calls := k.recorded(); !slices.Equal(calls, []string{"yield", "announce", "wait", "withdraw", "drop"}) {
		t.Fatalf("calls %v; want yield, announce, wait, withdraw, drop (no try while another waits)", calls)
	}
}

// Without liveness files the turn is the process's part alone.
func TestWriteTurnInProcessOnly(t *testing.T) {
	wt := newWriteTurn(func() platform.Turn { return nil })
	h, err := wt.take(context.Background(), never, time.Hour)
	if h == nil || err != nil {
		t.Fatalf("take: %v, %v", h, err)
	}
	if h2, _ := wt.take(context.Background(), func() time.Duration { return 0 }, time.Hour); h2 != nil {
		t.Fatal("two goroutines own the turn")
	}
	h.End()
}

func countOf(s []string, v string) (n int) {
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// eventuallyTrue polls cond until it holds (the test's timeout bounds it).
func eventuallyTrue(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(100 * time.Microsecond)
	}
}

// A turn kept after a claim goes to the process's next writer without a
// kernel call; one nobody takes is dropped for the other processes.
func TestWriteTurnKept(t *testing.T) {
	k := newFakeTurn(false)
	wt := newWriteTurn(func() platform.Turn { return k })
	h, _ := wt.take(context.Background(), never, time.Hour)
	wt.keep(h)
	h2, err := wt.take(context.Background(), func() time.Duration { return 0 }, time.Hour)
	if h2 != h || err != nil {
		t.Fatalf("the next writer got %p, %v; want the kept turn %p", h2, err, h)
	}
	if got := k.recorded(); !slices.Equal(got, []string{"try"}) {
		t.Fatalf("calls %v; want only the first try (the kept turn changes hands in the process)", got)
	}
	h2.End()
	h3, _ := wt.take(context.Background(), never, time.Hour)
	wt.keep(h3)
	eventuallyTrue(t, func() bool { return !k.isMine() })
	if h := wt.try(); h == nil {
		t.Fatal("the turn is not free after the kept one was dropped")
	} else {
		h.End()
	}
}

// A writer waiting for the kernel lock when the engine closes is not left
// waiting: the grant is dropped and it goes on without the turn.
func TestWriteTurnGrantAfterClose(t *testing.T) {
	k := newFakeTurn(true)
	wt := newWriteTurn(func() platform.Turn { return k })
	got := make(chan *WriteTurn)
	go func() {
		h, _ := wt.take(context.Background(), never, -1)
		got <- h
	}()
	<-k.waiting
	waitWanted(t, wt)
	wt.close()
	close(k.release)
	if h := <-got; h != nil {
		t.Fatal("a turn granted after Close was handed out")
	}
	if k.isMine() {
		t.Fatal("the grant after Close is still held")
	}
}

// waitWanted waits until a writer of wt waits for the kernel wait's result.
func waitWanted(t *testing.T, wt *writeTurn) {
	t.Helper()
	eventuallyTrue(t, func() bool {
		wt.mu.Lock()
		defer wt.mu.Unlock()
		return wt.wanted
	})
}
