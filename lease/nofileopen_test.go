//go:build linux

package lease

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/cleocode/cleolease/internal/platform"
	"golang.org/x/sys/unix"
)

// The engine must never open the database or its companion files (-wal,
// -shm, -journal) itself: on every Unix, closing any descriptor of a file
// drops all of the process's POSIX locks on it, SQLite's included
// (sqlite.org/howtocorrupt.html §2.2). Only SQLite's connections may open
// them. This test runs an engine through its life — open, a write under
// the lease, a hand-off to another process and back, close — and tells
// SQLite's opens from anybody else's three ways:
//
//   - inotify (IN_OPEN on the directory) counts every open of the four
//     files, by any process. Each phase has a budget: the SQLite
//     connections the phase opens (one descriptor of the database and one
//     of the -wal each; the -shm only when a process maps it first; never
//     the -journal, since the file is in WAL mode). The engine's phases
//     that open no connection must cause no open at all.
//   - A witness connection of this process keeps a read transaction open
//     for the whole run, so the process holds POSIX locks on the database
//     and the -shm (seen in /proc/locks). SQLite's own closes keep those
//     (it defers closing a descriptor while the process holds locks on
//     the file); anyone else's open-and-close drops them.
//   - /proc/self/fd, sampled throughout, never shows more descriptors of
//     a file than this process has SQLite connections on it, and none once
//     every connection is closed.
func TestEngineNeverOpensDatabaseFiles(t *testing.T) {
	ctx := context.Background()
	path := newDB(t)
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	files := map[string]string{path: "db", path + "-wal": "wal", path + "-shm": "shm", path + "-journal": "journal"}

	// The witness: a read transaction held throughout.
	endWitness := startWitness(t, path)
	// The writer: this process's second SQLite connection, opened now.
	writer := rawDB(t, path)
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	var n int
	if err := writer.QueryRowContext(ctx, "SELECT count(*) FROM counter").Scan(&n); err != nil {
		t.Fatal(err)
	}
	const sqliteConns = 3 // witness, writer, the engine's private connection

	locks := func(phase string) {
		t.Helper()
		for _, f := range []string{path, path + "-shm"} {
			if posixLocks(t, f) == 0 {
				t.Errorf("after %s: this process holds no POSIX lock on %s any more: a descriptor of it was closed outside SQLite", phase, filepath.Base(f))
			}
		}
	}
	locks("setup")

	opens := newOpenWatch(t, filepath.Dir(path), files)
	sampler := newFDSampler(t, files)
	defer sampler.stop()
	phase := func(name string, budget map[string]int) {
		t.Helper()
		got := opens.drain()
		for kind, k := range got {
			if k > budget[kind] {
				t.Errorf("%s: %d open(s) of the %s file, want at most %d (SQLite's own)", name, k, kind, budget[kind])
			}
		}
		locks(name)
	}
	opens.drain() // setup

	// Open: the engine's private connection is its only open.
	e, err := Open(ctx, Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			e.Close()
		}
	}()
	phase("Open", map[string]int{"db": 1, "wal": 1})

	// A write under the lease, release, linger, release of the row.
	opts := AcquireOptions{Wait: time.Minute, Require: true}
	for i := 0; i < 3; i++ {
		h, err := e.Acquire(ctx, "s", "l", opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := fencedWrite(ctx, writer, h, "parent"); err != nil {
			t.Fatal(err)
		}
		h.Release()
	}
	eventually(t, "the lingering row to be released", func() bool { return e.lane("s", "l").currentRow() == nil })
	phase("write", nil)

	// Hand-off: a waiter in another process registers with this holder and
	// is granted the lane; it writes (opening one connection: its budget)
	// and exits; this process takes the lane back.
	h, err := e.Acquire(ctx, "s", "l", opts)
	if err != nil {
		t.Fatal(err)
	}
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=child")
	if platform.PollWake {
		// No doorbell to register by: the waiter announces its want.
		l := e.lane("s", "l")
		eventually(t, "the waiter to announce its want", func() bool { return l.othersWaiting(ctx) })
	} else {
		waitRegistered(t, e, 1)
	}
	opens.drain() // the child's start: its engine and connection
	if err := fencedWrite(ctx, writer, h, "parent"); err != nil {
		t.Fatal(err)
	}
	h.Release()
	w.expect("granted")
	if err := w.wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
	h, err = e.Acquire(ctx, "s", "l", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := fencedWrite(ctx, writer, h, "parent"); err != nil {
		t.Fatal(err)
	}
	h.Release()
	phase("hand-off", map[string]int{"db": 1, "wal": 1})

	// Status reads the tables through the engine's connection.
	if _, err := e.Status(ctx); err != nil {
		t.Fatal(err)
	}
	phase("Status", nil)

	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	phase("Close", nil)

	sampler.stop()
	for kind, k := range sampler.max {
		limit := sqliteConns
		switch kind {
		case "shm":
			limit = 1 // one mapping per process, shared by its connections
		case "journal":
			limit = 0
		}
		if k > limit {
			t.Errorf("this process had %d descriptors of the %s file at once, more than its %d SQLite connection(s) can hold", k, kind, limit)
		}
	}
	if t.Failed() {
		return
	}

	// Every connection closed: no descriptor of the four files is left.
	endWitness()
	writer.Close()
	if left := fdCounts(files); len(left) != 0 {
		t.Errorf("descriptors left after every connection closed: %v", left)
	}
}

// Inspect and ReadOnly, meant for tools, may also run in a process that
// has the database open; there they must not drop its locks either.
func TestInspectKeepsLocks(t *testing.T) {
	path := newDB(t)
	startWitness(t, path)
	openEngine(t, path, nil)
	if _, err := Inspect(context.Background(), testBase, path, "", nil); err != nil {
		t.Fatal(err)
	}
	if posixLocks(t, path) == 0 {
		t.Errorf("after Inspect this process holds no POSIX lock on the database: a descriptor of it was closed outside SQLite")
	}
}

// startWitness opens a connection to path and keeps a read transaction
// open on it, so this process holds POSIX locks on the database and the
// -shm, until the returned function ends it and closes the connection.
func startWitness(t *testing.T, path string) func() {
	t.Helper()
	ctx := context.Background()
	witness := rawDB(t, path)
	witness.SetMaxOpenConns(1)
	wconn, err := witness.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := wconn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := wconn.QueryRowContext(ctx, "SELECT count(*) FROM counter").Scan(&n); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	end := func() {
		once.Do(func() {
			if _, err := wconn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Error(err)
			}
			wconn.Close()
			witness.Close()
		})
	}
	t.Cleanup(end)
	return end
}

// posixLocks counts the POSIX (fcntl) locks this process holds on the file
// at path, from /proc/locks (proc(5)): lines "N: POSIX ADVISORY READ PID
// MAJ:MIN:INODE START END".
func posixLocks(t *testing.T, path string) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	pid, ino := strconv.Itoa(os.Getpid()), ":"+strconv.FormatUint(st.Ino, 10)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "POSIX" && f[4] == pid && strings.HasSuffix(f[5], ino) {
			n++
		}
	}
	return n
}

// openWatch counts IN_OPEN events on the watched files of a directory.
type openWatch struct {
	t     *testing.T
	fd    int
	files map[string]string // base name → kind
}

func newOpenWatch(t *testing.T, dir string, files map[string]string) *openWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN); err != nil {
		unix.Close(fd)
		t.Skipf("inotify watch: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	w := &openWatch{t: t, fd: fd, files: map[string]string{}}
	for p, kind := range files {
		w.files[filepath.Base(p)] = kind
	}
	return w
}

// drain returns the opens per kind reported since the last drain. inotify
// queues an event when the open happens, so every open that returned
// before drain is counted.
func (w *openWatch) drain() map[string]int {
	got := map[string]int{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err == unix.EAGAIN || n <= 0 {
			return got
		}
		if err != nil {
			w.t.Fatalf("inotify read: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := unix.ByteSliceToString(buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)])
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				w.t.Fatal("inotify queue overflow")
			}
			if kind, ok := w.files[name]; ok && ev.Mask&unix.IN_OPEN != 0 {
				got[kind]++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// fdCounts counts this process's descriptors per kind of file.
func fdCounts(files map[string]string) map[string]int {
	out := map[string]int{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return out
	}
	for _, de := range ents {
		target, err := os.Readlink("/proc/self/fd/" + de.Name())
		if err != nil {
			continue // closed meanwhile
		}
		if kind, ok := files[strings.TrimSuffix(target, " (deleted)")]; ok {
			out[kind]++
		}
	}
	return out
}

// fdSampler records, per kind, the most descriptors seen at once.
type fdSampler struct {
	once sync.Once
	done chan struct{}
	wg   sync.WaitGroup
	max  map[string]int
}

func newFDSampler(t *testing.T, files map[string]string) *fdSampler {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	s := &fdSampler{done: make(chan struct{}), max: map[string]int{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			for kind, k := range fdCounts(files) {
				s.max[kind] = max(s.max[kind], k)
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling; max is safe to read afterwards.
func (s *fdSampler) stop() {
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
}
