package lease

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/sqlbase"
)

// Mixed bases on one file (locking.go): a process whose kind of SQLite
// file lock cannot coexist with another live process's is refused at
// Open with ErrLockingConflict naming both kinds; kinds that coexist open
// side by side; a killed process's kind is gone with it. The processes
// are real (each its own liveness lock); the kinds other than go-sqlite3's
// own come from a Base that reports another (lockingBase).

func init() { extraRoles["locking"] = runLocking }

// lockingBase is the tests' go-sqlite3 base reporting the kind of file
// lock kind, as a base built with other locking would.
type lockingBase struct {
	sqlbase.Base
	kind sqlbase.Locking
}

func (b lockingBase) Locking() sqlbase.Locking { return b.kind }

// openLocking opens an engine of path whose base reports kind.
func openLocking(path string, kind sqlbase.Locking) (*Engine, error) {
	return Open(context.Background(), Options{Base: lockingBase{testBase, kind}, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour})
}

// runLocking is the role "locking": open CLEOLEASE_DB with a base that
// reports the kind CLEOLEASE_LOCKING; print "refused REASON" for an
// ErrLockingConflict (a *Error of the open naming the file), "ERR …" for
// any other error; else take and release a lane, print "open" and stay
// open until stdin ends.
func runLocking() int {
	path := os.Getenv("CLEOLEASE_DB")
	e, err := openLocking(path, sqlbase.Locking(os.Getenv("CLEOLEASE_LOCKING")))
	if err != nil {
		var le *Error
		if errors.Is(err, ErrLockingConflict) && errors.As(err, &le) && le.Op == "open" && le.Path != "" {
			fmt.Println("refused", le.Reason)
			return 0
		}
		fmt.Println("ERR", err)
		return 1
	}
	defer e.Close()
	h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Wait: time.Hour, Require: true})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	h.Release()
	fmt.Println("open")
	bufio.NewScanner(os.Stdin).Scan()
	return 0
}

// startLocking starts the role "locking" on path with kind.
func startLocking(t *testing.T, path string, kind sqlbase.Locking) *child {
	t.Helper()
	return startChild(t, "locking", path, "CLEOLEASE_LOCKING="+string(kind), proctest.GoraceNoExitSleep())
}

// needAnnouncer skips where the liveness files announce nothing.
func needAnnouncer(t *testing.T) {
	t.Helper()
	if !platform.KeepsLocks {
		t.Skip("this platform keeps no liveness files to announce a kind on")
	}
}

// wantNames checks that a refusal's reason names both kinds and the
// remedy.
func wantNames(t *testing.T, reason string, own, other sqlbase.Locking) {
	t.Helper()
	for _, s := range []string{"this process (go-sqlite3) locks with " + own.Describe(), "another process of this file locks with " + other.Describe(), "compatible locking"} {
		if !strings.Contains(reason, s) {
			t.Fatalf("reason %q does not say %q", reason, s)
		}
	}
}

// A flock process beside a go-sqlite3 one (POSIX record locks) is refused
// at Open, naming both kinds; so is a go-sqlite3 process beside a flock
// one, the other way round. A killed process's kind goes with it: the
// other kind then opens.
func TestLockingConflictRefusedAtOpen(t *testing.T) {
	needAnnouncer(t)
	path := newDB(t)
	e, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := testBase.Locking(); got != sqlbase.LockingPOSIX && got != sqlbase.LockingWin32 {
		t.Fatalf("go-sqlite3's kind %q", got)
	}
	own := testBase.Locking()
	flock := startLocking(t, path, sqlbase.LockingFlock)
	wantNames(t, flock.expect("refused"), sqlbase.LockingFlock, own)
	flock.Cmd.Wait()

	// The other way round: this process is the later one.
	e.Close()
	flock = startLocking(t, path, sqlbase.LockingFlock)
	flock.expect("open")
	_, err = Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour})
	var le *Error
	if !errors.Is(err, ErrLockingConflict) || !errors.As(err, &le) || le.Op != "open" || le.Path == "" {
		t.Fatalf("Open beside a flock process: %v; want a *Error of the open wrapping ErrLockingConflict", err)
	}
	wantNames(t, le.Reason, own, sqlbase.LockingFlock)
	if !strings.Contains(err.Error(), le.Path) {
		t.Fatalf("%q does not name the file", err)
	}

	// Killed, however it dies, the flock process's kind is gone (Windows
	// drops a dead process's locks after a delay: LockFileEx
	// documentation).
	flock.Cmd.Process.Kill()
	flock.Cmd.Wait()
	proctest.Eventually(t, "Open after the flock process was killed", func() bool {
		e, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour})
		if errors.Is(err, ErrLockingConflict) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		return true
	})
}

// POSIX record locks and OFD locks coexist: a go-sqlite3 process and one
// reporting OFD locks (ncruces's default on Linux) both open and take the
// lane. A flock process is refused beside either, naming the one it
// found.
func TestLockingPOSIXBesideOFD(t *testing.T) {
	needAnnouncer(t)
	path := newDB(t)
	posix := startLocking(t, path, sqlbase.LockingPOSIX)
	posix.expect("open")
	ofd := startLocking(t, path, sqlbase.LockingOFD)
	ofd.expect("open")
	flock := startLocking(t, path, sqlbase.LockingFlock)
	wantNames(t, flock.expect("refused"), sqlbase.LockingFlock, sqlbase.LockingPOSIX)
	posix.Cmd.Process.Kill()
	posix.Cmd.Wait()
	proctest.Eventually(t, "a flock process refused for the OFD process alone", func() bool {
		flock := startLocking(t, path, sqlbase.LockingFlock)
		reason := flock.expect("refused")
		flock.Cmd.Wait()
		if strings.Contains(reason, "another process of this file locks with "+sqlbase.LockingPOSIX.Describe()) {
			return false // Windows: the killed process's lock not dropped yet
		}
		wantNames(t, reason, sqlbase.LockingFlock, sqlbase.LockingOFD)
		return true
	})
}

// Processes of two kinds that cannot coexist opening at once: each
// announces before it tests, so at least one sees the other, and never
// does a process of each kind stay open.
func TestLockingRace(t *testing.T) {
	needAnnouncer(t)
	path := newDB(t)
	var kids []*child
	kinds := []sqlbase.Locking{sqlbase.LockingPOSIX, sqlbase.LockingFlock}
	for i := 0; i < 3; i++ {
		for _, k := range kinds {
			kids = append(kids, startLocking(t, path, k))
		}
	}
	open := map[sqlbase.Locking]int{}
	for i, c := range kids {
		if !c.Out.Scan() {
			t.Fatal("a child ended without a word")
		}
		switch line := c.Out.Text(); {
		case line == "open":
			open[kinds[i%2]]++
		case strings.HasPrefix(line, "refused "):
		default:
			t.Fatalf("child: %q", line)
		}
	}
	if open[sqlbase.LockingPOSIX] > 0 && open[sqlbase.LockingFlock] > 0 {
		t.Fatalf("processes of both kinds open at once: %v", open)
	}
	t.Logf("open: %v", open)
}

// A base that reports a kind cleolease does not know is refused at Open,
// naming it: it could coexist with nothing it can tell.
func TestLockingUnknownKind(t *testing.T) {
	needAnnouncer(t)
	path := newDB(t)
	_, err := openLocking(path, "vfs-of-the-future")
	var le *Error
	if err == nil || !errors.As(err, &le) || !strings.Contains(err.Error(), `"vfs-of-the-future"`) {
		t.Fatalf("Open with an unknown kind: %v; want a *Error naming it", err)
	}
}

// lockingLog passes the reason of each Error-level record about SQLite
// file locks to ch.
type lockingLog struct{ ch chan string }

func (h lockingLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h lockingLog) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h lockingLog) WithGroup(string) slog.Handler                { return h }
func (h lockingLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "SQLite file locks") {
		return nil
	}
	reason := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "reason" {
			reason = a.Value.String()
		}
		return true
	})
	select {
	case h.ch <- reason:
	default:
	}
	return nil
}

// The liveness files removed while a go-sqlite3 process runs: a flock
// process that opens afterwards finds new files. Either the running
// process has already followed them and announced its kind there (the
// newcomer is refused), or it has not, and when it follows them it finds
// the newcomer's kind and reports it at level Error: never does neither
// see the other.
func TestLockingAfterSidecarRemoved(t *testing.T) {
	needAnnouncer(t)
	path := newDB(t)
	logged := make(chan string, 1)
	e, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000",
		TTL: 3 * time.Second, Logger: slog.New(lockingLog{logged})})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	removeSidecar(t, path)
	flock := startLocking(t, path, sqlbase.LockingFlock)
	if !flock.Out.Scan() {
		t.Fatal("the flock process ended without a word")
	}
	switch line := flock.Out.Text(); {
	case strings.HasPrefix(line, "refused "):
		wantNames(t, strings.TrimPrefix(line, "refused "), sqlbase.LockingFlock, testBase.Locking())
		t.Log("this process followed the files before the newcomer opened: it was refused")
	case line == "open":
		// This process follows the files at once (Linux tier: inotify) or
		// at its next heartbeat (TTL/3).
		select {
		case reason := <-logged:
			if !strings.Contains(reason, "another process of this file locks with "+sqlbase.LockingFlock.Describe()) {
				t.Fatalf("reported %q; want the newcomer's flock named", reason)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the conflict with a newcomer on the new liveness files was never reported")
		}
	default:
		t.Fatalf("flock process: %q", line)
	}
}
