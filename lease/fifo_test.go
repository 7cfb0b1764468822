package lease

import (
	"context"
	"sync"
	"testing"
)

// Issue 38 item 6: with Slice 0 (strict FIFO), a writer of the holder's
// process that queued at the gate before a writer of another process
// registered is served first: the lane stays with its process when the
// holder's turn ends, and goes to the other process after it. (It was
// handed to the other process at once, the local writer served after it.)
func TestFIFOAcrossProcessesCountsFromTheGate(t *testing.T) {
	needDoorbell(t)
	path := newDB(t)
	fifo := func(o *Options) { o.Slice = 0; o.Linger = 0 }
	p := openPeer(t, path, fifo)
	q := openPeer(t, path, fifo)
	ctx := context.Background()
	h, err := p.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var served []string
	var wg sync.WaitGroup
	write := func(e *Engine, who string) {
		defer wg.Done()
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Error(who, err)
			return
		}
		mu.Lock()
		served = append(served, who)
		mu.Unlock()
		h.Release()
	}
	wg.Add(1)
	go write(p, "p's second writer")
	l := p.lane("s", "l")
	eventually(t, "p's second writer to queue at the gate", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.gate.headLocked() != nil
	})
	wg.Add(1)
	go write(q, "q's writer")
	waitRegistered(t, p, 1)
	h.Release()
	wg.Wait()
	if len(served) != 2 || served[0] != "p's second writer" {
		t.Fatalf("served %v; want p's second writer (queued first), then q's writer", served)
	}
}
