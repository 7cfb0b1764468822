package lease

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/mattn/go-sqlite3"
)

// Helpers of the reliability tests (faults_test.go, clock_test.go,
// fuzz_test.go). Names start with rel to stay clear of the other test
// files of the package.

// relRoles are child-process roles of the reliability tests. They are run
// from init, before TestMain, so helpers_test.go's role switch needs no
// change: startChild(t, "rel-…", path, env...) reaches them.
var relRoles = map[string]func() int{
	"rel-steal-wait": relRoleStealWait,
	"rel-hold":       relRoleHold,
}

func init() {
	if f := relRoles[os.Getenv("CLEOLEASE_ROLE")]; f != nil {
		os.Exit(f())
	}
}

// relRoleStealWait waits for s/l with StealAfterTTL on, its clock read
// from the file CLEOLEASE_CLOCK (the parent steps it), then makes a fenced
// write named CLEOLEASE_NAME and prints "granted EPOCH ttl=N dead=N"
// (its reclaim counters). It releases and exits on a line from stdin.
func relRoleStealWait() int {
	path := os.Getenv("CLEOLEASE_DB")
	e, err := Open(context.Background(), Options{
		Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000",
		TTL: time.Hour, StealAfterTTL: true, Clock: relFileClock(os.Getenv("CLEOLEASE_CLOCK")),
	})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer e.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000")
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	ctx := context.Background()
	h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Priority: 100, Wait: time.Hour, Require: true})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if err := fencedWrite(ctx, db, h, os.Getenv("CLEOLEASE_NAME")); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	st := e.Stats()
	fmt.Printf("granted %d ttl=%d dead=%d\n", h.Epoch(), st.ReclaimTTL, st.ReclaimDead)
	bufio.NewScanner(os.Stdin).Scan()
	h.Release()
	return 0
}

// relRoleHold is helpers_test.go's "hold" with its clock read from the
// file CLEOLEASE_CLOCK: acquire s/l, print "held EPOCH", on a line from
// stdin make a fenced write and print "commit ok" or "commit ERR …",
// release, print "released", and wait for another line.
func relRoleHold() int {
	path := os.Getenv("CLEOLEASE_DB")
	e, err := Open(context.Background(), Options{
		Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000",
		TTL: time.Hour, Clock: relFileClock(os.Getenv("CLEOLEASE_CLOCK")),
	})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer e.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000")
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	ctx := context.Background()
	h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Priority: 100, Wait: time.Hour, Require: true})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("held", h.Epoch())
	in := bufio.NewScanner(os.Stdin)
	in.Scan()
	if err := fencedWrite(ctx, db, h, "hold"); err != nil {
		fmt.Println("commit ERR", err)
	} else {
		fmt.Println("commit ok")
	}
	h.Release()
	fmt.Println("released")
	in.Scan()
	return 0
}

// relFileClock is a Clock shared between processes: the wall time (Unix
// milliseconds) written in a file, which the test steps.
type relFileClock string

func (c relFileClock) Now() time.Time {
	b, err := os.ReadFile(string(c))
	// On Windows the open fails (sharing violation) while the test's
	// rename replaces the file (see set): tried again for up to 10 s there.
	for deadline := time.Now().Add(10 * time.Second); err != nil && runtime.GOOS == "windows" && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		b, err = os.ReadFile(string(c))
	}
	if err != nil {
		panic(err)
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		panic(err)
	}
	return time.UnixMilli(ms)
}

// set writes t atomically (a reader never sees a torn value).
func (c relFileClock) set(t testing.TB, at time.Time) {
	t.Helper()
	tmp := string(c) + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(at.UnixMilli(), 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	// On Windows a rename over a file that a child is reading fails
	// (access denied: Go opens files without FILE_SHARE_DELETE) until the
	// child closes it, a moment later: tried again for up to 10 s there.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Rename(tmp, string(c))
		if err == nil {
			return
		}
		if runtime.GOOS != "windows" || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

func (c relFileClock) step(t testing.TB, d time.Duration) { c.set(t, c.Now().Add(d)) }

func newFileClock(t testing.TB, at time.Time) relFileClock {
	c := relFileClock(filepath.Join(testdir.New(t), "clock"))
	c.set(t, at)
	return c
}

// relClock is an in-process fake wall clock the test steps.
type relClock struct {
	mu  sync.Mutex
	now time.Time
}

func newRelClock(at time.Time) *relClock { return &relClock{now: at} }

func (c *relClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *relClock) set(at time.Time) {
	c.mu.Lock()
	c.now = at
	c.mu.Unlock()
}

func (c *relClock) step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// relInjector is the fault hook of the tests: plans make chosen lease
// statements fail k times in a row; observers see every call; every call
// is counted and announced to after's channels.
type relInjector struct {
	mu    sync.Mutex
	plans map[string]*relPlan
	obs   map[string]func(n int)
	calls map[string]int
	subs  []relSub
}

type relPlan struct {
	err  error
	left int         // failures still to inject; <0: until cleared
	when func() bool // optional: inject only when it reports true
}

type relSub struct {
	op string
	n  int // fire when calls[op] reaches n
	ch chan struct{}
}

func newInjector(e *Engine) *relInjector {
	in := &relInjector{plans: map[string]*relPlan{}, obs: map[string]func(int){}, calls: map[string]int{}}
	e.setHook(in.hook)
	return in
}

func (in *relInjector) hook(op string) error {
	in.mu.Lock()
	in.calls[op]++
	n := in.calls[op]
	kept := in.subs[:0]
	for _, s := range in.subs {
		if s.op == op && n >= s.n {
			close(s.ch)
			continue
		}
		kept = append(kept, s)
	}
	in.subs = kept
	p, obs := in.plans[op], in.obs[op]
	in.mu.Unlock()
	if obs != nil {
		obs(n)
	}
	if p == nil || (p.when != nil && !p.when()) {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if p.left == 0 {
		return nil
	}
	if p.left > 0 {
		p.left--
	}
	return p.err
}

// observe calls f (outside the injector's lock) at every call of op,
// before the plan of op is applied.
func (in *relInjector) observe(op string, f func(n int)) {
	in.mu.Lock()
	in.obs[op] = f
	in.mu.Unlock()
}

// fail makes the next k calls of op fail with err (k < 0: all, until clear).
func (in *relInjector) fail(op string, err error, k int) {
	in.failWhen(op, err, k, nil)
}

// failWhen is fail, injecting only while when reports true.
func (in *relInjector) failWhen(op string, err error, k int, when func() bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.plans[op] = &relPlan{err: err, left: k, when: when}
}

// count reports how often op was called.
func (in *relInjector) count(op string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.calls[op]
}

func (in *relInjector) clear(op string) {
	in.mu.Lock()
	delete(in.plans, op)
	in.mu.Unlock()
}

// remaining reports how many injected failures of op are still pending.
func (in *relInjector) remaining(op string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if p := in.plans[op]; p != nil {
		return p.left
	}
	return 0
}

// after returns a channel closed once op has been called n more times.
func (in *relInjector) after(op string, n int) <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	ch := make(chan struct{})
	in.subs = append(in.subs, relSub{op: op, n: in.calls[op] + n, ch: ch})
	return ch
}

// relRecv waits for ch; the bound only turns a hang into a failure.
func relRecv(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// sqlite errors the injector returns.
var (
	errBusy  = sqlite3.Error{Code: sqlite3.ErrBusy}
	errIOErr = sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite}
)

// relLostLog is a slog handler that announces "lease lost" warnings.
type relLostLog struct{ ch chan string }

func newLostLog() *relLostLog { return &relLostLog{ch: make(chan string, 16)} }

func (h *relLostLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *relLostLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *relLostLog) WithGroup(string) slog.Handler            { return h }
func (h *relLostLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cleolease: lease lost" {
		var why string
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "reason" {
				why = a.Value.String()
			}
			return true
		})
		select {
		case h.ch <- why:
		default:
		}
	}
	return nil
}

// relLeaseRow is one row of _writer_leases as the tests read it.
type relLeaseRow struct {
	holder              string
	epoch               int64
	acquired, heartbeat int64
	ttl                 int64
}

// relActive returns the active rows of s/l (never more than one if the
// engine is right; the test asserts it).
func relActive(t testing.TB, db *sql.DB, scope, lane string) []relLeaseRow {
	t.Helper()
	rows, err := db.Query(`SELECT holder_id, epoch, acquired_at, heartbeat_at, ttl_ms FROM _writer_leases
		WHERE scope = ? AND lane = ? AND active = 1`, scope, lane)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []relLeaseRow
	for rows.Next() {
		var r relLeaseRow
		if err := rows.Scan(&r.holder, &r.epoch, &r.acquired, &r.heartbeat, &r.ttl); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// relOneActive asserts exactly one active row of s/l, held by holder with
// epoch, and returns it.
func relOneActive(t testing.TB, db *sql.DB, holder string, epoch int64) relLeaseRow {
	t.Helper()
	rs := relActive(t, db, "s", "l")
	if len(rs) != 1 || rs[0].holder != holder || rs[0].epoch != epoch {
		t.Fatalf("active rows %+v, want exactly one held by %s at epoch %d", rs, holder, epoch)
	}
	return rs[0]
}

// relGrants returns the fenced writes recorded in table grants, in commit
// order, and checks that epochs never decrease and that no epoch has two
// writers.
func relGrants(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT who, epoch FROM grants ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	var last int64
	owner := map[int64]string{}
	for rows.Next() {
		var who string
		var ep int64
		rows.Scan(&who, &ep)
		if ep < last {
			t.Errorf("write of %s at epoch %d committed after epoch %d", who, ep, last)
		}
		if o, ok := owner[ep]; ok && o != who {
			t.Errorf("epoch %d has two writers: %s and %s", ep, o, who)
		}
		owner[ep] = who
		last = ep
		out = append(out, fmt.Sprintf("%s@%d", who, ep))
	}
	return out
}

// expectWithin is child.expect with a bound that turns a hang into a
// failure (the bound is not what the test measures).
func (c *child) expectWithin(prefix string, d time.Duration) string {
	c.T.Helper()
	type res struct {
		ok   bool
		line string
	}
	ch := make(chan res, 1)
	go func() {
		ok := c.Out.Scan()
		ch <- res{ok, c.Out.Text()}
	}()
	select {
	case r := <-ch:
		if !r.ok {
			c.T.Fatalf("child %d ended before %q", c.Cmd.Process.Pid, prefix)
		}
		if !strings.HasPrefix(r.line, prefix) {
			c.T.Fatalf("child said %q, want prefix %q", r.line, prefix)
		}
		return strings.TrimSpace(strings.TrimPrefix(r.line, prefix))
	case <-time.After(d):
		c.T.Fatalf("child %d did not say %q within %s", c.Cmd.Process.Pid, prefix, d)
		return ""
	}
}
