package lease

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var req = AcquireOptions{Priority: 100, Wait: time.Hour, Require: true}

func TestAcquireReleaseEpochsIncrease(t *testing.T) {
	path := newDB(t)
	var last int64
	for round := 0; round < 3; round++ {
		e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
		for i := 0; i < 5; i++ {
			h, err := e.Acquire(context.Background(), "s", "l", req)
			if err != nil {
				t.Fatal(err)
			}
			if h.Epoch() <= last {
				t.Fatalf("epoch %d after %d", h.Epoch(), last)
			}
			last = h.Epoch()
			if err := h.Check(context.Background()); err != nil {
				t.Fatal(err)
			}
			h.Release()
			h.Release() // harmless
		}
		e.Close()
		if _, err := rawDB(t, path).Exec("VACUUM"); err != nil {
			t.Fatal(err)
		}
	}
	var active, rows int
	rawDB(t, path).QueryRow(`SELECT count(*), coalesce(sum(active), 0) FROM _writer_leases`).Scan(&rows, &active)
	if active != 0 || rows > 1 {
		t.Fatalf("after release: %d rows, %d active; want at most the high-water row, none active", rows, active)
	}
}

func TestReentrancyAndSingleFlight(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = time.Hour })
	var wg sync.WaitGroup
	var mu sync.Mutex
	inside := 0
	epochs := map[int64]bool{}
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			h, err := e.Acquire(ctx, "s", "l", req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			if inside != 1 {
				t.Errorf("%d holders inside the gate", inside)
			}
			epochs[h.Epoch()] = true
			mu.Unlock()
			// Nested acquisition through the context re-enters.
			inner, err := e.Acquire(WithHold(ctx, h), "s", "l", req)
			if err != nil || inner.Epoch() != h.Epoch() || !inner.Reentrant() {
				t.Errorf("re-entry: %v, epoch %d vs %d", err, inner.Epoch(), h.Epoch())
			}
			inner.Release()
			inner.Release()
			mu.Lock()
			inside--
			mu.Unlock()
			h.Release()
			h.Release()
		}()
	}
	wg.Wait()
	if s := e.Stats(); s.Claims != 1 || s.Grants != 1000 {
		t.Fatalf("claims=%d grants=%d, want exactly one claim transaction for 1000 grants", s.Claims, s.Grants)
	}
	if len(epochs) != 1 {
		t.Fatalf("epochs %v, want one", epochs)
	}
	l := e.lane("s", "l")
	if l.held.depth != 0 {
		t.Fatalf("depth %d after all releases", l.held.depth)
	}
}

func TestCancelledWaiterLeavesNoTrace(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	holder.expect("held")
	var logged lockedLog
	e := openEngine(t, path, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	for _, local := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Priority: 100, Wait: time.Hour, Require: !local})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || h != nil {
			t.Fatalf("local=%v: got %v, %v; want the context's error and no grant", local, h, err)
		}
		if n := queueLen(t, path, "s", "l"); n != 0 {
			t.Fatalf("%d queue rows left behind", n)
		}
	}
	if s := e.Stats(); s.Degraded != 0 || s.Grants != 0 {
		t.Fatalf("a context deadline became a grant: %+v", s)
	}
	// The caller above cleolease gets ctx.Err() alone; the file, lane and
	// holder are in the counters and the log.
	if s := e.Stats(); s.Abandoned != 2 {
		t.Errorf("Stats().Abandoned = %d, want 2", s.Abandoned)
	}
	text := logged.String()
	if n := strings.Count(text, `msg="cleolease: wait ended by its context"`); n != 2 {
		t.Errorf("%d wait-ended events logged, want 2:\n%s", n, text)
	}
	for _, want := range []string{"path=" + e.Path(), "scope=s", "lane=l", "holder="} {
		if !strings.Contains(text, want) {
			t.Errorf("the wait-ended event does not name %q:\n%s", want, text)
		}
	}
}

// lockedLog is an io.Writer for a test's logger, safe for concurrent use.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestWaitBoundModes(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	holder.expect("held")
	e := openEngine(t, path, nil)
	_, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Priority: 100, Wait: 50 * time.Millisecond, Require: true})
	var le *Error
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &le) || le.Holder == "" {
		t.Fatalf("require: %v; want ErrUnavailable naming the holder", err)
	}
	h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Priority: 100, Wait: 50 * time.Millisecond})
	if err != nil || !h.Degraded() || h.Epoch() != 0 || h.Held() {
		t.Fatalf("local: %v degraded=%v; want a degraded grant", err, h != nil && h.Degraded())
	}
	h.Release()
	if s := e.Stats(); s.Degraded != 1 || s.Unavailable != 1 {
		t.Fatalf("counters %+v", s)
	}
	if n := queueLen(t, path, "s", "l"); n != 0 {
		t.Fatalf("%d queue rows left behind", n)
	}
}

// On a replicated file (LiteFS) the wait bound never makes a degraded
// grant, even in mode local: a holder that looks alive may be a former
// primary's process, and no write goes ahead without the lease.
func TestWaitBoundReplicatedNeverDegrades(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	holder.expect("held")
	e := openEngine(t, path, func(o *Options) { o.Replicated = true })
	h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Priority: 100, Wait: 50 * time.Millisecond})
	var le *Error
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &le) || le.Holder == "" || !strings.Contains(le.Reason, "replicated") {
		if h != nil {
			h.Release()
		}
		t.Fatalf("local on a replicated file: %v (degraded %v); want ErrUnavailable naming the holder", err, h != nil && h.Degraded())
	}
	if s := e.Stats(); s.Degraded != 0 || s.Unavailable != 1 {
		t.Fatalf("counters %+v", s)
	}
}

func TestKilledHolderIsReclaimedWithoutTTL(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	epoch, _ := strconv.ParseInt(holder.expect("held"), 10, 64)
	e := openEngine(t, path, nil)
	done := make(chan *Hold)
	go func() {
		h, err := e.Acquire(context.Background(), "s", "l", req)
		if err != nil {
			t.Error(err)
		}
		done <- h
	}()
	eventually(t, "the waiter to queue", func() bool { return queueLen(t, path, "s", "l") == 1 })
	holder.Cmd.Process.Signal(syscall.SIGKILL)
	h := <-done
	if h == nil {
		t.Fatal("no grant")
	}
	if h.Epoch() <= epoch {
		t.Fatalf("epoch %d, want above %d", h.Epoch(), epoch)
	}
	if n := queueLen(t, path, "s", "l"); n != 0 {
		t.Fatalf("%d queue rows remain", n)
	}
	if e.Stats().ReclaimDead != 1 {
		t.Fatalf("reclaims %+v", e.Stats())
	}
	h.Release()
}

func TestQueueOrderAndDeadWaiterSkipped(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	holder.expect("held")
	// Enqueue in a known order: two priorities, one waiter that dies.
	type w struct {
		name string
		prio int
	}
	order := []w{{"a100", 100}, {"b50", 50}, {"dead", 50}, {"c100", 100}, {"d50", 50}}
	var kids []*child
	for i, x := range order {
		c := startChild(t, "wait", path, "CLEOLEASE_NAME="+x.name, "CLEOLEASE_PRIO="+strconv.Itoa(x.prio))
		kids = append(kids, c)
		eventually(t, "waiter "+x.name+" to queue", func() bool { return queueLen(t, path, "s", "l") == i+1 })
	}
	kids[2].Cmd.Process.Signal(syscall.SIGKILL)
	kids[2].Cmd.Wait()
	holder.send("go")
	holder.expect("commit ok")
	holder.expect("released")
	for i, c := range kids {
		if i != 2 {
			c.expect("granted")
		}
	}
	rows, err := rawDB(t, path).Query(`SELECT who, epoch FROM grants ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var last int64
	for rows.Next() {
		var who string
		var ep int64
		rows.Scan(&who, &ep)
		got = append(got, who)
		if ep <= last {
			t.Errorf("epoch %d after %d", ep, last)
		}
		last = ep
	}
	rows.Close()
	want := []string{"hold", "b50", "d50", "a100", "c100"}
	if len(got) != len(want) {
		t.Fatalf("grants %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("grants %v, want %v", got, want)
		}
	}
}

func TestForgedRowsAreReclaimedNotTrusted(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	db := rawDB(t, path)
	// A holder that never existed, a pid that belongs to an unrelated live
	// process (ours, with the wrong start time), an epoch and a heartbeat
	// far in the future.
	cases := []struct{ name, start string }{
		{"ghost", ""},
		{"reused-pid", bootID() + "/" + pidNamespace() + "/1"},
	}
	for _, c := range cases {
		pid := 4000000
		if c.start != "" {
			pid = os.Getpid()
		}
		future := time.Now().Add(24 * time.Hour).UnixMilli()
		if _, err := db.Exec(`INSERT INTO _writer_leases(scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms, holder_start)
			VALUES ('s', 'l', ?, ?, 1000000, ?, ?, 3600000, nullif(?, ''))`, c.name, pid, future, future, c.start); err != nil {
			t.Fatal(err)
		}
		h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Wait: 5 * time.Second, Require: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h.Epoch() <= 1000000 {
			t.Fatalf("%s: epoch %d did not move past the forged one", c.name, h.Epoch())
		}
		h.Release()
		db.Exec(`DELETE FROM _writer_leases`)
	}
}

func TestDroppedIndexIsRefused(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, nil)
	e.Close()
	db := rawDB(t, path)
	if _, err := db.Exec(`DROP INDEX ux_writer_leases_active`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path})
	if !errors.Is(err, ErrIndexMissing) {
		t.Fatalf("got %v, want ErrIndexMissing", err)
	}
}

func TestTwoActiveRowsAreUntrusted(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, nil)
	db := rawDB(t, path)
	// Sneak a second active row past the index and the import trigger
	// (which skips it) by dropping both.
	if _, err := db.Exec(`DROP INDEX ux_writer_leases_active; DROP TRIGGER tx_writer_leases_import;
		INSERT INTO _writer_leases(scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms) VALUES ('s','l','x',1,1,0,0,1), ('s','l','y',1,2,0,0,1)`); err != nil {
		t.Fatal(err)
	}
	_, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Wait: time.Second, Require: true})
	if !errors.Is(err, ErrUntrusted) {
		t.Fatalf("got %v, want ErrUntrusted", err)
	}
}

func TestIdentitySpellingsShareOneEngine(t *testing.T) {
	path := newDB(t)
	dir := filepath.Dir(path)
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(path, link); err != nil {
		if runtime.GOOS == "windows" {
			// CreateSymbolicLink needs SeCreateSymbolicLinkPrivilege or
			// Developer Mode on Windows.
			t.Skipf("no symbolic link on Windows without the privilege: %v", err)
		}
		t.Fatal(err)
	}
	if _, err := os.Stat(link); err != nil && runtime.GOOS == "windows" {
		// Wine's gap: Wine 8 creates the link but does not follow it
		// (GetFileAttributesEx: file not found); Windows follows symbolic
		// links in CreateFile and GetFileAttributesEx
		// (https://learn.microsoft.com/windows/win32/fileio/symbolic-link-effects-on-file-systems-functions).
		t.Skipf("Wine does not follow the symbolic link it made: %v", err)
	}
	e1 := openEngine(t, path, nil)
	e2 := openEngine(t, link, nil)
	e3 := openEngine(t, filepath.Join(dir, "a", "..", "lease.db"), nil)
	if e1 != e2 || e1 != e3 {
		t.Fatal("three spellings of one file got different engines")
	}
	other := openEngine(t, newDB(t), nil)
	if other == e1 {
		t.Fatal("two files share an engine")
	}
}

func TestReplacedFileIsRefused(t *testing.T) {
	skipReplaceOnWindows(t)
	path := newDB(t)
	e := openEngine(t, path, nil)
	repl := path + ".new"
	os.WriteFile(repl, nil, 0o644)
	if err := os.Rename(repl, path); err != nil {
		t.Fatal(err)
	}
	_, err := e.Acquire(context.Background(), "s", "l", req)
	if !errors.Is(err, ErrFileChanged) {
		t.Fatalf("got %v, want ErrFileChanged", err)
	}
}

func TestManyProcessesCountExactly(t *testing.T) {
	path := newDB(t)
	const procs, n = 6, 100
	var kids []*child
	for i := 0; i < procs; i++ {
		kids = append(kids, startChild(t, "count", path, "CLEOLEASE_N="+strconv.Itoa(n), "CLEOLEASE_LINGER=5ms"))
	}
	for _, c := range kids {
		c.expect("done")
	}
	var got int
	rawDB(t, path).QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&got)
	if got != procs*n {
		t.Fatalf("counter %d, want %d", got, procs*n)
	}
}

func TestInspectReadsWithoutWriting(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	epoch := holder.expect("held")
	before, _ := os.Stat(path)
	lanes, err := Inspect(context.Background(), testBase, path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 1 || lanes[0].Holder == nil || !lanes[0].Holder.Alive || strconv.FormatInt(lanes[0].Holder.Epoch, 10) != epoch {
		t.Fatalf("lanes %+v", lanes)
	}
	after, _ := os.Stat(path)
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Fatal("Inspect changed the database file")
	}
	holder.Cmd.Process.Signal(syscall.SIGKILL)
	holder.Cmd.Wait()
	lanes, err = Inspect(context.Background(), testBase, path, "", nil)
	if err != nil || lanes[0].Holder == nil || lanes[0].Holder.Alive {
		t.Fatalf("after SIGKILL: %+v, %v; want the holder reported dead", lanes, err)
	}
	if _, err := Inspect(context.Background(), testBase, newDB(t), "", nil); !errors.Is(err, ErrNoLeaseTables) {
		t.Fatalf("fresh database: %v, want ErrNoLeaseTables", err)
	}
}

func TestReplacedFileIsRefusedWhileLingering(t *testing.T) {
	skipReplaceOnWindows(t)
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = time.Hour })
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release() // the row lingers: the next acquisition takes the fast path
	repl := path + ".new"
	os.WriteFile(repl, nil, 0o644)
	if err := os.Rename(repl, path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replaced file to be refused", func() bool {
		h, err := e.Acquire(context.Background(), "s", "l", req)
		if err == nil {
			h.Release()
			return false
		}
		if !errors.Is(err, ErrFileChanged) {
			t.Fatalf("got %v, want ErrFileChanged", err)
		}
		return true
	})
}

// TestOrderTravelsWithTheGrant: waiters that told the holder they wait
// (registrations, which they send instead of writing queue rows) are served
// in priority-then-arrival order across several hand-offs, each holder
// passing the registrations it did not serve on to the next.
func TestOrderTravelsWithTheGrant(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLane(t)
	if err := fencedWrite(context.Background(), rawDB(t, path), h, "first"); err != nil {
		t.Fatal(err)
	}
	var kids []*child
	for i, x := range []struct {
		name string
		prio int
	}{{"a100", 100}, {"b50", 50}, {"c100", 100}, {"d50", 50}} {
		kids = append(kids, startChild(t, "wait", path, "CLEOLEASE_NAME="+x.name, "CLEOLEASE_PRIO="+strconv.Itoa(x.prio)))
		waitRegistered(t, e, i+1)
	}
	h.Release()
	for _, c := range kids {
		c.expect("granted")
	}
	var got string
	if err := rawDB(t, path).QueryRow(`SELECT group_concat(who, ',') FROM (SELECT who FROM grants ORDER BY id)`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "first,b50,d50,a100,c100"; got != want {
		t.Fatalf("grant order %s, want %s", got, want)
	}
}

// TestGaveUpWaiterIsNeverGranted: a waiter that gives up after the holder
// has picked it for the hand-off, but before the hand-off transaction
// runs, is not granted the lane (the hand-off checks again inside its
// transaction, and the waiter stops announcing its wait before it leaves
// the queue); the lane stays usable.
func TestGaveUpWaiterIsNeverGranted(t *testing.T) {
	needDoorbell(t)
	e, path := giveUpDuringHandoff(t, "handoff") // picked, transaction not begun
	if rs := relActive(t, rawDB(t, path), "s", "l"); len(rs) != 0 {
		t.Fatalf("active rows %+v after the only waiter gave up, want none", rs)
	}
	laneUsable(t, e, "lane unusable after a waiter gave up")
}

// TestSelfEnqueuedRowAgesFromArrival: a waiter that writes its own queue
// row after waiting on its registration alone keeps its arrival time, so
// it does not lose the aging it earned meanwhile.
func TestSelfEnqueuedRowAgesFromArrival(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, nil)
	arrived := e.nowMS() - 5000
	r := registration{Scope: "s", Lane: "l", ID: "cl-waiter", PID: 1, Priority: 100, Arrival: 7, TTL: 30000, Enqueued: arrived}
	err := e.immediate(context.Background(), func(ctx context.Context, c *sql.Conn) error {
		return enqueue(ctx, c, "s", "l", r, e.nowMS())
	})
	if err != nil {
		t.Fatal(err)
	}
	var enq, deadline int64
	if err := rawDB(t, path).QueryRow(`SELECT enqueued_at, deadline_at FROM _writer_queue WHERE holder_id = 'cl-waiter'`).Scan(&enq, &deadline); err != nil {
		t.Fatal(err)
	}
	if enq != arrived || deadline != arrived+30000 {
		t.Fatalf("enqueued_at %d deadline_at %d, want %d and %d", enq, deadline, arrived, arrived+30000)
	}
}

// TestCancelledWaiterBehindLongTransaction: a waiter whose context ends
// while the holder keeps SQLite's write lock (inside a long transaction)
// gets its own context's error back at once: leaving the wait needs no
// write when it only registered, so it does not queue behind that
// transaction.
func TestCancelledWaiterBehindLongTransaction(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLane(t)
	ctx := context.Background()
	db := rawDB(t, path)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS work(x)`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO work VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	w := startChild(t, "quit", path)
	waitRegistered(t, e, 1)
	w.send("quit")
	if got := w.expect("gaveup"); got != "canceled" {
		t.Fatalf("waiter gave up with %q, want its context's error", got)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	h.Release()
	h2, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h2.Release()
}

// TestLateGrantToAWaiterThatGaveUpIsPassedOn: the hand-off checks that
// its waiter still waits and commits the grant just after that waiter gave
// up. The grant's datagram then reaches a process no longer waiting, which
// adopts the lane and passes it on, so the lane is not left with a holder
// that does not know it holds it.
func TestLateGrantToAWaiterThatGaveUpIsPassedOn(t *testing.T) {
	needDoorbell(t)
	e, _ := giveUpDuringHandoff(t, "handoff/commit") // granted, not committed yet
	laneUsable(t, e, "lane left with the waiter that gave up")
}

// TestForgedRegistrationsAreNotGranted: registrations sent to the holder's
// doorbell by something other than a waiting cleolease process — no
// liveness slot, or a slot whose want byte nobody holds — are not granted
// the lane (it would stay with a "holder" that never releases it), and a
// registration for a lane this process never used creates no state.
func TestForgedRegistrationsAreNotGranted(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLane(t)
	forged := []registration{
		{Scope: "s", Lane: "l", ID: "cl-forged-a", PID: 1, Priority: -1000, Arrival: 1, TTL: 30000},
		{Scope: "s", Lane: "l", ID: "cl-forged-b", PID: 1, Slot: slotFor("cl-forged-b"), Start: "x/y/z/1", Priority: -1000, Arrival: 1, TTL: 30000},
		{Scope: "s", Lane: "other", ID: "cl-forged-c", PID: 1, Slot: slotFor("cl-forged-c"), Start: "x/y/z/1", TTL: 30000},
	}
	if !e.bell.send(e.holderID, encodeWaiting(forged)) {
		t.Fatal("could not reach the engine's doorbell")
	}
	// A real waiter after the forged ones, so that the datagram has been
	// read when its registration is.
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=real")
	l := e.lane("s", "l")
	eventually(t, "the real waiter to register", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, r := range l.inbox.pending {
			if r.ID != "cl-forged-a" && r.ID != "cl-forged-b" {
				return true
			}
		}
		return false
	})
	if e.knownLane("s", "other") != nil {
		t.Error("a datagram created state for a lane this process never used")
	}
	h.Release()
	w.expect("granted")
	var who string
	if err := rawDB(t, path).QueryRow(`SELECT group_concat(who) FROM grants`).Scan(&who); err != nil {
		t.Fatal(err)
	}
	if who != "real" {
		t.Fatalf("grants %q, want only the real waiter", who)
	}
	laneUsable(t, e, "lane unusable after forged registrations")
}

// waitRegistered waits until the holder e keeps n registrations for lane
// s/l (waiters that told it they wait).
func waitRegistered(t *testing.T, e *Engine, n int) {
	t.Helper()
	l := e.lane("s", "l")
	eventually(t, "the waiters to register", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.inbox.pending) == n
	})
}

// giveUpDuringHandoff holds lane s/l in a new engine, starts a waiter that
// registers with it, and releases the lane with the hand-off paused at the
// lease statement op (see Engine.setHook); there the waiter gives up, then
// the hand-off goes on. It returns once the release has returned.
func giveUpDuringHandoff(t *testing.T, op string) (*Engine, string) {
	t.Helper()
	e, path, h := holdLane(t)
	w := startChild(t, "quit", path)
	waitRegistered(t, e, 1)
	reached, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.setHook(func(o string) error {
		if o == op {
			once.Do(func() {
				close(reached)
				<-proceed
			})
		}
		return nil
	})
	released := make(chan struct{})
	go func() {
		h.Release()
		close(released)
	}()
	<-reached
	w.send("quit")
	w.expect("gaveup")
	close(proceed)
	<-released
	e.setHook(nil)
	return e, path
}

// laneUsable fails t with what unless e can take lane s/l again (within
// a generous deadline: a lane left with a holder that does not know it
// holds it would never come back).
func laneUsable(t *testing.T, e *Engine, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	h.Release()
}

// holdLane opens an engine (no linger) on a new database and takes lane s/l.
func holdLane(t *testing.T) (*Engine, string, *Hold) {
	t.Helper()
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	return e, path, h
}
