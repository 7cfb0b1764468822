package lease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// dbDescriptors returns this process's descriptors of the database at path
// and its -wal, -shm and -journal files, by descriptor number.
func dbDescriptors(t *testing.T, path string) map[int]string {
	names := map[string]bool{path: true, path + "-wal": true, path + "-shm": true, path + "-journal": true}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !names[target] {
			continue
		}
		fd, _ := strconv.Atoi(e.Name())
		out[fd] = target
	}
	return out
}

// No code path of the engine opens the database or its -wal, -shm or
// -journal file itself: closing any descriptor of a file drops all of the
// process's POSIX locks on it, SQLite's included
// (sqlite.org/howtocorrupt.html §2.2). Watched from outside, around the
// engine's life: the only descriptors of those files are the engine's one
// SQLite connection's (WAL mode: the database, -wal, -shm), opened once
// and never closed while the engine lives, through claims, waits, probes,
// hand-offs, status and identity checks.
func TestEngineNeverOpensTheDatabaseFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/fd")
	}
	path := newDB(t)
	if got := dbDescriptors(t, path); len(got) != 0 {
		t.Fatalf("descriptors before the engine: %v", got)
	}
	e, err := Open(context.Background(), Options{Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: 300 * time.Millisecond, Linger: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		seen     = map[int]string{}
		problems []string
		stop     = make(chan struct{})
		done     = make(chan struct{})
	)
	sample := func() {
		now := dbDescriptors(t, path)
		mu.Lock()
		defer mu.Unlock()
		if len(problems) > 0 {
			return
		}
		for fd, name := range seen {
			if now[fd] != name {
				problems = append(problems, "descriptor "+strconv.Itoa(fd)+" of "+name+" closed while the engine lived")
			}
		}
		for fd, name := range now {
			seen[fd] = name
		}
		if len(seen) > 3 {
			problems = append(problems, fmt.Sprintf("descriptors of more than one connection: %v", seen))
		}
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				sample()
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()

	ctx := context.Background()
	for i := 0; i < 5; i++ {
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
	}
	holder := startChild(t, "hold", path)
	holder.expect("held")
	got := make(chan error, 1)
	go func() {
		h, err := e.Acquire(ctx, "s", "l", req)
		if err == nil {
			h.Release()
		}
		got <- err
	}()
	// Only the engine's connection: no raw connection of the test's own.
	eventually(t, "the waiter to queue", func() bool {
		st, err := e.Status(ctx)
		return err == nil && len(st) == 1 && st[0].Waiting+len(st[0].Waiters) > 0
	})
	if err := e.CheckFile(); err != nil {
		t.Fatal(err)
	}
	holder.send("go")
	holder.expect("commit ok")
	holder.expect("released")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// Sample on while the linger watcher releases the row.
	eventually(t, "the lingering row to be released", func() bool { return e.lane("s", "l").currentRow() == nil })
	sample()
	close(stop)
	<-done
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the engine's SQLite connection was never seen: the test watches the wrong files")
	}
	for _, p := range problems {
		t.Error(p)
	}
	if left := dbDescriptors(t, path); len(left) != 0 {
		t.Fatalf("descriptors left after Close: %v", left)
	}
}
