package lease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// TestCloseEndsAHeldUpHeartbeat: Close does not wait out a heartbeat that
// SQLITE_BUSY holds up (in a program: a transaction of its own keeping the
// write lock, left open when the database is closed). The beat in progress
// ends because the engine closed (context.Canceled), not at its TTL/3
// deadline, and no further beat starts.
func TestCloseEndsAHeldUpHeartbeat(t *testing.T) {
	path := newDB(t)
	logs := &beatLog{}
	e := openEngine(t, path, func(o *Options) {
		o.TTL = 3 * time.Second // a beat every second, each given a second
		o.Logger = slog.New(logs)
	})
	if _, err := e.Acquire(context.Background(), "s", "l", req); err != nil {
		t.Fatal(err)
	}
	in := newInjector(e)
	in.fail("heartbeat", errBusy, -1)
	relRecv(t, in.after("heartbeat", 1), "a heartbeat")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	errs := logs.errs()
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("beats deferred with %v; want one, ended by Close (context.Canceled)", errs)
	}
}

// beatLog is a slog handler keeping the errors of "heartbeat deferred".
type beatLog struct {
	mu  sync.Mutex
	got []error
}

func (h *beatLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *beatLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *beatLog) WithGroup(string) slog.Handler            { return h }
func (h *beatLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "cleolease: heartbeat deferred" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			h.mu.Lock()
			h.got = append(h.got, err)
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *beatLog) errs() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.got...)
}
