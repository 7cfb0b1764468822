package lease

import (
	"context"
	"errors"
	"time"
)

// backoff is a capped exponential sleep that honours a context and an
// optional extra channel (a wait bound). It never spins.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) reset() { b.cur = 0 }

// next advances the back-off and returns the period to wait.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else if b.cur *= 2; b.cur > b.max {
		b.cur = b.max
	}
	return b.cur
}

func (b *backoff) sleep(ctx context.Context, bound <-chan time.Time) error {
	t := time.NewTimer(b.next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-bound:
		return errWaitBound
	case <-t.C:
		return nil
	}
}

var errWaitBound = errors.New("wait bound reached")
