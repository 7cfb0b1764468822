package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Acquire after Close fails with ErrClosed, on a lane the engine used and
// on one it never used, for a file's engine and an in-memory one: it
// neither claims on the closed connection ("sql: database is closed") nor
// grants.
func TestAcquireAfterCloseIsErrClosed(t *testing.T) {
	for _, memory := range []bool{false, true} {
		path := newDB(t)
		e, err := Open(context.Background(), Options{Base: testBase, Path: path, MemoryOnly: memory,
			DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.Acquire(context.Background(), "s", "used", AcquireOptions{Require: true})
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		for _, lane := range []string{"used", "never used"} {
			h, err := e.Acquire(context.Background(), "s", lane, AcquireOptions{Require: true})
			if !errors.Is(err, ErrClosed) {
				t.Errorf("memory %v: Acquire of lane %q after Close: %v (hold %v), want ErrClosed", memory, lane, err, h)
			}
			if h != nil {
				h.Release()
			}
		}
	}
}
