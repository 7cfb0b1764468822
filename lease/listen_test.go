package lease

import (
	"context"
	"errors"
	"os"
	"testing"
)

// openLate opens an engine of path the way the driver does on a file whose
// lease tables are complete (Options.TablesReady).
func openLate(t *testing.T) (*Engine, string) {
	t.Helper()
	path := newDB(t)
	openEngine(t, path, nil).Close() // the tables
	return openEngine(t, path, func(o *Options) { o.TablesReady = true }), path
}

// TestTablesReadyListensAtTheFirstLease: an engine opened on a file whose
// lease tables are complete has no socket, no file watch and no heartbeat
// goroutine while its process only reads; the first Acquire starts them
// before anything can name the process, and a reader that keeps checking
// the file's identity starts them at the lateStatsBeforeListen'th check,
// so its later checks are the watch's.
func TestTablesReadyListensAtTheFirstLease(t *testing.T) {
	e, _ := openLate(t)
	if e.listening.Load() || e.bell.p() != none {
		t.Fatal("Open with TablesReady started listening")
	}
	for i := 1; i < lateStatsBeforeListen; i++ {
		if err := e.FileChanged(); err != nil {
			t.Fatal(err)
		}
	}
	if e.listening.Load() || e.bell.p() != none {
		t.Fatalf("listening after %d identity checks; want it from the %dth", lateStatsBeforeListen-1, lateStatsBeforeListen)
	}
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if !e.listening.Load() || e.bell.p() == none {
		t.Fatal("not listening after the first Acquire")
	}

	r, _ := openLate(t)
	for i := 0; i < lateStatsBeforeListen; i++ {
		if err := r.FileChanged(); err != nil {
			t.Fatal(err)
		}
	}
	if !r.listening.Load() || r.bell.p() == none {
		t.Fatalf("a reader is not listening after %d identity checks", lateStatsBeforeListen)
	}
	if w := r.bell.p().watch; w != nil && !r.bell.dbWatched() {
		t.Fatal("the file watch started but does not watch the database")
	}
}

// TestLateWatchSeesAFileReplacedBeforeIt: a file renamed over while the
// engine was not yet watching (it reads unwatched) is reported at the
// check that starts the watch, and at every check after it — the watch
// starts before that check's stat, never in place of it.
func TestLateWatchSeesAFileReplacedBeforeIt(t *testing.T) {
	skipReplaceOnWindows(t)
	e, path := openLate(t)
	for i := 1; i < lateStatsBeforeListen; i++ {
		if err := e.FileChanged(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path+".new", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := e.FileChanged(); !errors.Is(err, ErrFileChanged) {
			t.Fatalf("check %d after the replacement: %v, want ErrFileChanged", lateStatsBeforeListen+i, err)
		}
	}
	if !e.listening.Load() {
		t.Fatal("the check that found the replacement did not start listening")
	}
}

// TestCloseBeforeListeningStartsNothing: an engine closed before its first
// lease never starts listening, even when asked after Close.
func TestCloseBeforeListeningStartsNothing(t *testing.T) {
	e, _ := openLate(t)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e.listenLate()
	if e.listening.Load() || e.bell.p() != none {
		t.Fatal("listening after Close")
	}
}
