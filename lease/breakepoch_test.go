package lease

import (
	"context"
	"errors"
	"testing"
)

// TestBreakEpochGuard: BreakEpoch breaks only the epoch it is given; a
// lane held at another epoch is left alone and its holder reported, and a
// free lane is no error (issue 16, item 7: break may otherwise hit a holder
// that took the lane after the administrator looked).
func TestBreakEpochGuard(t *testing.T) {
	ctx := context.Background()
	e := openEngine(t, newDB(t), func(o *Options) { o.Linger = 0 })
	if h, err := e.BreakEpoch(ctx, "s", "l", 1, true); h != nil || err != nil {
		t.Fatalf("free lane: %+v, %v; want nil, nil", h, err)
	}
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.BreakEpoch(ctx, "s", "l", h.Epoch()+7, true)
	if !errors.Is(err, ErrEpochChanged) || st == nil || st.Epoch != h.Epoch() {
		t.Fatalf("wrong epoch: %+v, %v; want the active holder at epoch %d and ErrEpochChanged", st, err, h.Epoch())
	}
	if err := h.Check(ctx); err != nil {
		t.Fatalf("the holder lost its lease to a refused break: %v", err)
	}
	if _, err := e.BreakEpoch(ctx, "s", "l", 0, true); err == nil {
		t.Fatal("epoch 0 accepted")
	}
	st, err = e.BreakEpoch(ctx, "s", "l", h.Epoch(), true)
	if err != nil || st == nil || st.Epoch != h.Epoch() {
		t.Fatalf("right epoch: %+v, %v; want the holder broken", st, err)
	}
	if err := h.Check(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("after the break, Check = %v, want ErrLost", err)
	}
	h.Release()
}
