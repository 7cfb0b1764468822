package cleolease_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
)

// captureHandler keeps every record it is given, with its attributes
// flattened to key = value (groups joined with '.').
type captureHandler struct {
	mu      *sync.Mutex
	records *[]captured
	attrs   []slog.Attr
	group   string
}

type captured struct {
	level slog.Level
	msg   string
	attrs map[string]slog.Value
}

func newCapture() *captureHandler {
	return &captureHandler{mu: &sync.Mutex{}, records: &[]captured{}}
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	c := captured{level: r.Level, msg: r.Message, attrs: map[string]slog.Value{}}
	for _, a := range h.attrs {
		c.attrs[a.Key] = a.Value
	}
	r.Attrs(func(a slog.Attr) bool {
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		c.attrs[key] = a.Value
		return true
	})
	h.mu.Lock()
	*h.records = append(*h.records, c)
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	cp := *h
	cp.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &cp
}

func (h *captureHandler) WithGroup(name string) slog.Handler {
	cp := *h
	cp.group = name
	return &cp
}

// degraded returns the degraded-grant warnings captured for path.
func (h *captureHandler) degraded(path string) []captured {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []captured
	for _, c := range *h.records {
		if strings.Contains(c.msg, "degraded grant") && c.attrs["path"].String() == path {
			out = append(out, c)
		}
	}
	return out
}

// setDefaultLogger makes h slog's default for the test and restores the
// previous default and the log package's output and flags (which
// slog.SetDefault redirects) afterwards.
func setDefaultLogger(t *testing.T, h slog.Handler) {
	prev, out, flags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(out)
		log.SetFlags(flags)
	})
}

// TestDegradedGrantWarnsWithoutLogger: in _lease_mode=local, a write whose
// _lease_wait runs out while another process holds the lane goes ahead
// without the lease; with no Config.Logger, slog.Default() gets a warning
// naming the file, the scope and lane, how long the write waited and the
// holder it waited on (the other process, by pid). With _lease_quiet=true,
// or a discarding Config.Logger, nothing is logged, though the grant is
// still degraded and counted.
func TestDegradedGrantWarnsWithoutLogger(t *testing.T) {
	path, raw := newFile(t)
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	holder := spawn(t, "intercept-hold", "file:"+path)
	holder.next(t, "READY")
	holder.send("acquire")
	holder.next(t, "HELD")

	capture := newCapture()
	setDefaultLogger(t, capture)
	const wait = 50 * time.Millisecond
	ctx := context.Background()
	write := func(db *sql.DB) {
		t.Helper()
		if _, err := db.ExecContext(ctx, insertItem, "degraded", "default"); err != nil {
			t.Fatalf("the degraded write: %v", err)
		}
		st, err := cleolease.Stats(ctx, db)
		if err != nil || st.Degraded != 1 {
			t.Fatalf("Stats = %+v, %v; want one degraded grant", st, err)
		}
		if err := db.Close(); err != nil { // closes the engine: the next open makes its own
			t.Fatal(err)
		}
	}

	db, err := sql.Open("cleolease", fmt.Sprintf("file:%s?_lease_wait=%s", path, wait))
	if err != nil {
		t.Fatal(err)
	}
	write(db)
	got := capture.degraded(resolved)
	if len(got) != 1 {
		t.Fatalf("degraded-grant warnings on slog.Default() = %d (%+v); want 1", len(got), got)
	}
	w := got[0]
	if w.level != slog.LevelWarn {
		t.Errorf("level %v, want WARN", w.level)
	}
	if w.attrs["scope"].String() != "main" || w.attrs["lane"].String() != "default" {
		t.Errorf("scope, lane = %v, %v; want main, default", w.attrs["scope"], w.attrs["lane"])
	}
	if v := w.attrs["waited"]; v.Kind() != slog.KindDuration || v.Duration() < wait {
		t.Errorf("waited = %v; want a duration of at least %s", v, wait)
	}
	if h := w.attrs["holder"].String(); !strings.Contains(h, fmt.Sprintf("(pid %d,", holder.pid)) {
		t.Errorf("holder = %q; want the holding process, pid %d", h, holder.pid)
	}

	db, err = sql.Open("cleolease", fmt.Sprintf("file:%s?_lease_wait=%s&_lease_quiet=true", path, wait))
	if err != nil {
		t.Fatal(err)
	}
	write(db)
	cfg, err := cleolease.ParseDSN(fmt.Sprintf("file:%s?_lease_wait=%s", path, wait))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	db, err = cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	write(db)
	if got := capture.degraded(resolved); len(got) != 1 {
		t.Errorf("with _lease_quiet=true or a discarding Config.Logger: %d warnings in all; want still the first one only", len(got))
	}
	if n := count(t, raw, `SELECT count(*) FROM items WHERE v = 'degraded'`); n != 3 {
		t.Errorf("degraded writes stored: %d, want 3", n)
	}
}
