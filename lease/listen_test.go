package lease

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
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

// TestLateListenAfterTheNonceWasRemoved: where no file watch exists (the
// portable tier, other systems) a late start that finds the sidecar
// directory's nonce file gone records a new one — a lease statement,
// whose identity check counts as unwatched too. The check that starts
// listening returns (it used to wait for itself, for ever), and the
// reader's later checks run as before.
func TestLateListenAfterTheNonceWasRemoved(t *testing.T) {
	dir := testdir.New(t)
	side := filepath.Join(dir, "side")
	if err := os.Mkdir(side, 0o755); err != nil {
		t.Fatal(err)
	}
	path := newDB(t)
	o := Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: 50 * time.Millisecond, SidecarDir: side}
	first, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	first.Close() // the tables
	o.TablesReady = true
	seams := realSeams()
	seams.shared = false
	seams.watchFiles = func(string, string, func()) (platform.FileWatch, error) { return nil, platform.ErrUnsupported }
	e, err := openWith(context.Background(), o, seams)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.proof == nil || e.proof.path == "" {
		t.Fatal("no nonce file in the sidecar directory")
	}
	for i := 1; i < lateStatsBeforeListen; i++ {
		if err := e.FileChanged(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(e.proof.path); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := e.FileChanged(); err != nil {
			t.Fatal(err)
		}
	}
	if !e.listening.Load() {
		t.Fatal("not listening after the 16th unwatched check")
	}
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
}
