package cleolease_test

// Transparent interception (issue 5) and the multi-process lease tests of
// issue 3, run against real processes: the test binary re-executes itself
// as the roles registered below (see testmain_test.go).

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
)

func init() {
	roles["intercept-rmw"] = roleRMW
	roles["intercept-hold"] = roleHold
}

// insertItem records, inside the write that inserts the row, which holder
// and epoch were active on the lane at that moment (?1 value, ?2 lane).
const insertItem = `INSERT INTO items(v, lane, epoch, pid) VALUES (?1, ?2,
	(SELECT epoch FROM _writer_leases WHERE active = 1 AND scope = 'main' AND lane = ?2),
	(SELECT holder_pid FROM _writer_leases WHERE active = 1 AND scope = 'main' AND lane = ?2))`

// ---------------------------------------------------------------------------
// Child roles.

func say(a ...any) { fmt.Println(a...) }

// outcome classifies a write's error for the parent: "ok", "lost …",
// "foreign …" or "err …".
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, cleolease.ErrLeaseLost):
		return "lost " + err.Error()
	case errors.Is(err, cleolease.ErrForeignTransaction):
		return "foreign " + err.Error()
	}
	return "err " + err.Error()
}

// roleRMW runs CLEOLEASE_G goroutines × CLEOLEASE_N read-modify-write
// increments of counter 1 in plain deferred transactions (BeginTx with nil
// options) on CLEOLEASE_DRIVER (default cleolease), after a "go" line
// (answered with "CALLING" when CLEOLEASE_ANNOUNCE is set), and reports
// "RESULT commits errors grants first-error" (grants -1 when the database
// has no lease engine).
func roleRMW() int {
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv("CLEOLEASE_N"))
	g, _ := strconv.Atoi(os.Getenv("CLEOLEASE_G"))
	drv := os.Getenv("CLEOLEASE_DRIVER")
	if drv == "" {
		drv = "cleolease"
	}
	who := os.Getenv("CLEOLEASE_WHO")
	if who == "" {
		who = strconv.Itoa(os.Getpid())
	}
	db, err := sql.Open(drv, os.Getenv("CLEOLEASE_DSN"))
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		say("ERR", err)
		return 1
	}
	defer db.Close()
	say("READY", os.Getpid())
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return 1
	}
	if os.Getenv("CLEOLEASE_ANNOUNCE") != "" {
		say("CALLING")
	}
	var (
		mu             sync.Mutex
		commits, fails int
		first          string
		wg             sync.WaitGroup
	)
	for range g {
		wg.Go(func() {
			for range n {
				err := increment(ctx, db, who)
				mu.Lock()
				if err != nil {
					fails++
					if first == "" {
						first = err.Error()
					}
				} else {
					commits++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	grants := int64(-1)
	if st, err := cleolease.Stats(ctx, db); err == nil {
		grants = st.Grants
	}
	say("RESULT", commits, fails, grants, first)
	return 0
}

// increment is the read-modify-write every writer runs: read the counter in
// a deferred transaction, write it back plus one, log who did it.
func increment(ctx context.Context, db *sql.DB, who string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
		tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
		tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO log(who, n) VALUES (?, ?)`, who, n+1); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// roleHold takes orders on stdin, on lane CLEOLEASE_LANE (default
// "default"):
//
//	acquire      AcquireLease → "HELD epoch"
//	release      Lease.Release → "RELEASED"
//	begin V      BeginTx (under the lease if held) + insert V → "INTX"
//	commit       commit that transaction → "RES outcome"
//	tx V         begin, insert V, commit → "RES outcome"
//	exec V       autocommit insert V → "RES outcome"
//	check        Lease.Check → "RES outcome"
//	exit         close the database and exit
func roleHold() int {
	ctx := context.Background()
	lane := os.Getenv("CLEOLEASE_LANE")
	if lane == "" {
		lane = "default"
	}
	ctx = cleolease.WithLane(ctx, "main", lane)
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		say("ERR", err)
		return 1
	}
	say("READY", os.Getpid())
	var (
		l  *cleolease.Lease
		tx *sql.Tx
	)
	wctx := ctx
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "acquire":
			if l, err = cleolease.AcquireLease(ctx, db); err != nil {
				say("ERR", err)
				continue
			}
			wctx = l.Context(ctx)
			say("HELD", l.Epoch())
		case "release":
			l.Release()
			wctx = ctx
			say("RELEASED")
		case "begin":
			if tx, err = db.BeginTx(wctx, nil); err == nil {
				if _, err = tx.ExecContext(wctx, insertItem, arg, lane); err != nil {
					tx.Rollback()
				}
			}
			if err != nil {
				say("ERR", err)
				continue
			}
			say("INTX")
		case "commit":
			say("RES", outcome(tx.Commit()))
		case "tx":
			err := func() error {
				tx, err := db.BeginTx(wctx, nil)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(wctx, insertItem, arg, lane); err != nil {
					tx.Rollback()
					return err
				}
				return tx.Commit()
			}()
			say("RES", outcome(err))
		case "exec":
			_, err := db.ExecContext(wctx, insertItem, arg, lane)
			say("RES", outcome(err))
		case "check":
			say("RES", outcome(l.Check(ctx)))
		case "exit":
			db.Close()
			return 0
		default:
			say("ERR unknown command", cmd)
		}
	}
	return 0
}

// ---------------------------------------------------------------------------
// Parent helpers.

// proc is a child whose stdout lines arrive on a channel, so the parent can
// both wait for a line (with a deadline) and check that none has come.
type proc struct {
	*child
	pid   int
	lines chan string
}

func spawn(t *testing.T, role, dsn string, env ...string) *proc {
	t.Helper()
	c := startChild(t, role, dsn, env...)
	p := &proc{child: c, pid: c.Cmd.Process.Pid, lines: make(chan string, 256)}
	go func() {
		defer close(p.lines)
		for c.Out.Scan() {
			p.lines <- c.Out.Text()
		}
	}()
	return p
}

// next waits for the child's next line, checks its prefix and returns the
// rest.
func (p *proc) next(t *testing.T, prefix string) string {
	t.Helper()
	return p.nextWithin(t, prefix, 20*time.Second)
}

func (p *proc) nextWithin(t *testing.T, prefix string, d time.Duration) string {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("child %d ended before %q", p.pid, prefix)
		}
		if !strings.HasPrefix(line, prefix) {
			t.Fatalf("child %d said %q, want prefix %q", p.pid, line, prefix)
		}
		return strings.TrimSpace(strings.TrimPrefix(line, prefix))
	case <-timer.C:
		t.Fatalf("child %d: no %q within %s", p.pid, prefix, d)
	}
	return ""
}

// silent fails if the child has said anything since its last line was read.
func (p *proc) silent(t *testing.T, while string) {
	t.Helper()
	select {
	case line := <-p.lines:
		t.Fatalf("child %d said %q while %s", p.pid, line, while)
	default:
	}
}

func atoi64(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.Fields(s)[0], 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// newFile creates a WAL database with the tables the tests write and
// returns its path and a raw go-sqlite3 handle for inspection (which takes
// no lease and never waits for one).
func newFile(t *testing.T) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(testdir.New(t), "app.db")
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Exec(`CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
		INSERT INTO counter VALUES (1, 0);
		CREATE TABLE log(id INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT NOT NULL, n INTEGER NOT NULL);
		CREATE TABLE items(id INTEGER PRIMARY KEY, v TEXT NOT NULL, lane TEXT, epoch INTEGER, pid INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return path, raw
}

func openLeased(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	return db
}

func count(t *testing.T, q interface {
	QueryRow(string, ...any) *sql.Row
}, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := q.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// queued reports whether pid has a row in _writer_queue (false while the
// table does not exist).
func queued(raw *sql.DB, pid int) bool {
	var n int
	err := raw.QueryRow(`SELECT count(*) FROM _writer_queue WHERE holder_pid = ?`, pid).Scan(&n)
	return err == nil && n > 0
}

type activeRow struct {
	pid, epoch, heartbeat, acquired, ttl int64
}

// active reads the active _writer_leases row of main/lane.
func active(t *testing.T, raw *sql.DB, lane string) (activeRow, bool) {
	t.Helper()
	var r activeRow
	err := raw.QueryRow(`SELECT holder_pid, epoch, heartbeat_at, acquired_at, ttl_ms FROM _writer_leases
		WHERE scope = 'main' AND lane = ? AND active = 1`, lane).Scan(&r.pid, &r.epoch, &r.heartbeat, &r.acquired, &r.ttl)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, true
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrBusy
}

// recv waits for a value on ch, failing after 20s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// ---------------------------------------------------------------------------
// 1. The famous "database is locked" case.

type lockedCase struct {
	aErr    error  // A's first error (write or commit)
	bResult string // B's RESULT line (after the "RESULT" word)
	bEarly  bool   // B finished before A committed
	counter int64
	order   []string // log.who in insertion order
}

// bOutcome parses B's RESULT: commits and errors.
func (r lockedCase) bOutcome(t *testing.T) (commits, errs int64) {
	t.Helper()
	f := strings.Fields(r.bResult)
	if len(f) < 2 {
		t.Fatalf("B said RESULT %q", r.bResult)
	}
	c, _ := strconv.ParseInt(f[0], 10, 64)
	e, _ := strconv.ParseInt(f[1], 10, 64)
	return c, e
}

// runLockedCase: A (this process) begins a deferred transaction with
// default options and reads the counter; B, in another process on its own
// *sql.DB, then tries to increment it (its "CALLING" line arrives before A
// writes); A writes the counter plus one and commits. With awaitB (the raw
// go-sqlite3 control), A writes only after B has finished, which B can do
// there without waiting for A.
func runLockedCase(t *testing.T, driverName, dsn string, raw *sql.DB, awaitB bool) lockedCase {
	t.Helper()
	ctx := context.Background()
	var out lockedCase
	dbA, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer dbA.Close()
	b := spawn(t, "intercept-rmw", dsn, "CLEOLEASE_DRIVER="+driverName, "CLEOLEASE_N=1", "CLEOLEASE_G=1",
		"CLEOLEASE_WHO=B", "CLEOLEASE_ANNOUNCE=1")
	b.next(t, "READY")

	tx, err := dbA.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("A: BeginTx: %v", err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
		t.Fatalf("A: read: %v", err)
	}
	b.send("go")
	b.next(t, "CALLING")
	if awaitB {
		out.bResult, out.bEarly = b.next(t, "RESULT"), true
	}
	out.aErr = writeAndCommit(ctx, tx, n, func() {
		if !out.bEarly {
			select {
			case line := <-b.lines:
				out.bEarly, out.bResult = true, strings.TrimSpace(strings.TrimPrefix(line, "RESULT"))
			default:
			}
		}
	})
	if !out.bEarly {
		out.bResult = b.next(t, "RESULT")
	}
	out.counter = count(t, raw, `SELECT n FROM counter WHERE id = 1`)
	out.order = logOrder(t, raw)
	return out
}

// writeAndCommit is A's second half: write the value read plus one, log
// it, run beforeCommit, commit.
func writeAndCommit(ctx context.Context, tx *sql.Tx, n int, beforeCommit func()) error {
	if _, err := tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO log(who, n) VALUES ('A', ?)`, n+1); err != nil {
		return err
	}
	beforeCommit()
	return tx.Commit()
}

func logOrder(t *testing.T, raw *sql.DB) []string {
	t.Helper()
	rows, err := raw.Query(`SELECT who FROM log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []string
	for rows.Next() {
		var who string
		if err := rows.Scan(&who); err != nil {
			t.Fatal(err)
		}
		order = append(order, who)
	}
	return order
}

func checkLockedCase(t *testing.T, r lockedCase) {
	t.Helper()
	if r.bEarly {
		t.Errorf("B finished (RESULT %q) while A's transaction was open: it must wait for A's commit", r.bResult)
	}
	if r.aErr != nil {
		t.Errorf("A: %v", r.aErr)
	}
	if c, e := r.bOutcome(t); c != 1 || e != 0 {
		t.Errorf("B: RESULT %q, want 1 commit and 0 errors", r.bResult)
	}
	if r.counter != 2 {
		t.Errorf("counter = %d, want 2", r.counter)
	}
	if strings.Join(r.order, ",") != "A,B" {
		t.Errorf("write order %v, want [A B]", r.order)
	}
}

func TestInterceptDatabaseIsLocked(t *testing.T) {
	t.Run("cleolease", func(t *testing.T) {
		path, raw := newFile(t)
		checkLockedCase(t, runLockedCase(t, "cleolease", path, raw, false))
	})
	t.Run("cleolease-B-observably-queued", func(t *testing.T) {
		// While A's transaction (BEGIN IMMEDIATE) is open no other process
		// can write, not even its own queue row, so B's wait above is not
		// visible from outside. Here a third process C holds the lane
		// first: A's BeginTx and then B queue behind it (both rows
		// visible), C lets go, A's transaction begins with B still queued.
		path, raw := newFile(t)
		ctx := context.Background()
		me := os.Getpid()
		c := spawn(t, "intercept-hold", path)
		c.next(t, "READY")
		c.send("acquire")
		c.next(t, "HELD")
		dbA := openLeased(t, path)
		b := spawn(t, "intercept-rmw", path, "CLEOLEASE_N=1", "CLEOLEASE_G=1", "CLEOLEASE_WHO=B", "CLEOLEASE_ANNOUNCE=1")
		b.next(t, "READY")

		type began struct {
			tx  *sql.Tx
			err error
		}
		ch := make(chan began, 1)
		go func() {
			tx, err := dbA.BeginTx(ctx, nil)
			ch <- began{tx, err}
		}()
		eventually(t, "A queued behind C", func() bool { return queued(raw, me) })
		b.send("go")
		b.next(t, "CALLING")
		eventually(t, "B queued behind A", func() bool { return queued(raw, b.pid) })
		c.send("release")
		c.next(t, "RELEASED")
		bg := recv(t, ch, "A's BeginTx once C released")
		if bg.err != nil {
			t.Fatalf("A: BeginTx: %v", bg.err)
		}
		tx := bg.tx
		defer tx.Rollback()
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
			t.Fatalf("A: read: %v", err)
		}
		var r lockedCase
		r.aErr = writeAndCommit(ctx, tx, n, func() {
			if !queued(raw, b.pid) {
				t.Error("B left the queue while A's transaction was open")
			}
			select {
			case line := <-b.lines:
				r.bEarly, r.bResult = true, strings.TrimSpace(strings.TrimPrefix(line, "RESULT"))
			default:
			}
		})
		if !r.bEarly {
			r.bResult = b.next(t, "RESULT")
		}
		r.counter = count(t, raw, `SELECT n FROM counter WHERE id = 1`)
		r.order = logOrder(t, raw)
		checkLockedCase(t, r)
	})
	t.Run("control-raw-go-sqlite3", func(t *testing.T) {
		// The same scenario on plain go-sqlite3 (deferred BEGIN, no
		// _txlock): B does not wait for A, and A's upgrade from reader to
		// writer then fails with SQLITE_BUSY ("database is locked"), so
		// the assertions above would fail.
		path, raw := newFile(t)
		r := runLockedCase(t, "sqlite3", path+"?_busy_timeout=5000", raw, true)
		t.Logf("control (raw go-sqlite3): B finished while A's transaction was open (RESULT %q); A: %v; counter = %d, order %v",
			r.bResult, r.aErr, r.counter, r.order)
		if !isBusy(r.aErr) {
			t.Fatalf("control: A's error = %v, want SQLITE_BUSY (the control must show the failure)", r.aErr)
		}
		if r.counter == 2 {
			t.Fatal("control unexpectedly reached counter 2")
		}
	})
}

// ---------------------------------------------------------------------------
// 2, 3. Read-modify-write from several processes.

type rmwTotals struct {
	commits, errors, grants int64
	firstErr                string
}

func runRMW(t *testing.T, dsn string, procs, goroutines, n int) rmwTotals {
	t.Helper()
	ps := make([]*proc, procs)
	for i := range ps {
		ps[i] = spawn(t, "intercept-rmw", dsn, "CLEOLEASE_N="+strconv.Itoa(n), "CLEOLEASE_G="+strconv.Itoa(goroutines))
	}
	for _, p := range ps {
		p.next(t, "READY")
	}
	for _, p := range ps {
		p.send("go")
	}
	var tot rmwTotals
	// A guard against a stall, not a timing: under Wine on the 2-vCPU VM
	// with other work running, 1600 hand-offs took 8 to 22 s (when Windows
	// waiters polled; Wine's process switches stay slow with the mailslot
	// doorbell).
	guard := 60 * time.Second
	if runtime.GOOS == "windows" {
		guard = 2 * time.Minute
	}
	for _, p := range ps {
		res := p.nextWithin(t, "RESULT", guard)
		f := strings.SplitN(res, " ", 4)
		if len(f) < 3 {
			t.Fatalf("child %d: RESULT %q", p.pid, res)
		}
		c, _ := strconv.ParseInt(f[0], 10, 64)
		e, _ := strconv.ParseInt(f[1], 10, 64)
		g, _ := strconv.ParseInt(f[2], 10, 64)
		tot.commits += c
		tot.errors += e
		tot.grants += g
		if len(f) == 4 && tot.firstErr == "" {
			tot.firstErr = f[3]
		}
	}
	return tot
}

func TestInterceptReadModifyWrite4x2(t *testing.T) {
	const procs, goroutines, n = 4, 2, 200
	t.Run("cleolease", func(t *testing.T) {
		path, raw := newFile(t)
		tot := runRMW(t, path, procs, goroutines, n)
		final := count(t, raw, `SELECT n FROM counter WHERE id = 1`)
		if tot.errors != 0 {
			t.Errorf("%d errors (first: %s), want none", tot.errors, tot.firstErr)
		}
		if tot.commits != procs*goroutines*n || final != tot.commits {
			t.Errorf("commits = %d, counter = %d, want both %d", tot.commits, final, procs*goroutines*n)
		}
		if logged := count(t, raw, `SELECT count(*) FROM log`); logged != tot.commits {
			t.Errorf("log has %d rows, want %d", logged, tot.commits)
		}
		if tot.grants < tot.commits {
			t.Errorf("the engines granted %d holds for %d commits: some commit was not leased", tot.grants, tot.commits)
		}
	})
	t.Run("control-lease-mode-off", func(t *testing.T) {
		path, raw := newFile(t)
		tot := runRMW(t, path+"?_lease_mode=off", procs, goroutines, n)
		final := count(t, raw, `SELECT n FROM counter WHERE id = 1`)
		lost := tot.commits - final
		t.Logf("control (_lease_mode=off): %d commits, %d errors (first: %s), %d lost updates", tot.commits, tot.errors, tot.firstErr, lost)
		if tot.errors == 0 && lost == 0 {
			t.Fatal("control run showed neither errors nor lost updates: the test could not fail")
		}
	})
}

func TestInterceptEightProcesses(t *testing.T) {
	const procs, n = 8, 200
	t.Run("cleolease", func(t *testing.T) {
		path, raw := newFile(t)
		tot := runRMW(t, path, procs, 1, n)
		if tot.errors != 0 {
			t.Errorf("%d errors returned to writers (first: %s), want none", tot.errors, tot.firstErr)
		}
		if final := count(t, raw, `SELECT n FROM counter WHERE id = 1`); final != procs*n || tot.commits != procs*n {
			t.Errorf("counter = %d after %d commits, want %d", final, tot.commits, procs*n)
		}
		if tot.grants < tot.commits {
			t.Errorf("grants %d < commits %d", tot.grants, tot.commits)
		}
	})
	t.Run("control-lease-mode-off", func(t *testing.T) {
		path, raw := newFile(t)
		tot := runRMW(t, path+"?_lease_mode=off", procs, 1, n)
		final := count(t, raw, `SELECT n FROM counter WHERE id = 1`)
		t.Logf("control (_lease_mode=off): %d commits, %d errors (first: %s), counter %d", tot.commits, tot.errors, tot.firstErr, final)
		if tot.errors == 0 && final == procs*n {
			t.Fatal("control run showed neither errors nor lost updates: the test could not fail")
		}
	})
}

// ---------------------------------------------------------------------------
// 4. Every write path waits for a lane held by another process.

func TestInterceptHeldLaneBlocksEveryWritePath(t *testing.T) {
	path, raw := newFile(t)
	db := openLeased(t, path)
	ctx := context.Background()
	me := os.Getpid()
	b := spawn(t, "intercept-hold", path)
	b.next(t, "READY")

	st, err := db.PrepareContext(ctx, insertItem)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	type result struct {
		rows *sql.Rows
		err  error
	}
	// blocked checks that write, started while B holds the lane, waits for
	// the lease (A's queue row appears) and has not completed; then lets B
	// go and returns the write's result.
	blocked := func(t *testing.T, write func() result) (result, int64) {
		t.Helper()
		b.send("acquire")
		eB := atoi64(t, b.next(t, "HELD"))
		done := make(chan result, 1)
		go func() { done <- write() }()
		var early *result
		eventually(t, "A queued behind B", func() bool {
			select {
			case r := <-done:
				early = &r
				return true
			default:
			}
			return queued(raw, me)
		})
		if early == nil {
			select {
			case r := <-done:
				early = &r
			default:
			}
		}
		if early != nil {
			if early.rows != nil {
				early.rows.Close()
			}
			b.send("release")
			b.next(t, "RELEASED")
			t.Fatalf("the write completed (err %v) while B held the lane", early.err)
		}
		if r, ok := active(t, raw, "default"); !ok || r.pid != int64(b.pid) || r.epoch != eB {
			t.Fatalf("active row %+v (present %v), want B (pid %d, epoch %d)", r, ok, b.pid, eB)
		}
		b.send("release")
		b.next(t, "RELEASED")
		return recv(t, done, "the write after B released"), eB
	}

	t.Run("Query INSERT RETURNING", func(t *testing.T) {
		r, eB := blocked(t, func() result {
			rows, err := db.QueryContext(ctx, insertItem+` RETURNING epoch, pid`, "returning", "default")
			return result{rows, err}
		})
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !r.rows.Next() {
			t.Fatalf("no row returned: %v", r.rows.Err())
		}
		var epoch, pid int64
		if err := r.rows.Scan(&epoch, &pid); err != nil {
			t.Fatal(err)
		}
		// The rows are still open: A must be the active holder.
		ar, ok := active(t, raw, "default")
		if !ok || ar.pid != int64(me) || ar.epoch != epoch {
			t.Errorf("while the RETURNING rows are open the active row is %+v (present %v), want A (pid %d, epoch %d)", ar, ok, me, epoch)
		}
		if err := r.rows.Close(); err != nil {
			t.Fatalf("rows.Close (commit): %v", err)
		}
		if pid != int64(me) || epoch <= eB {
			t.Errorf("write ran under pid %d epoch %d, want A (pid %d) with an epoch > B's %d", pid, epoch, me, eB)
		}
		if n := count(t, raw, `SELECT count(*) FROM items WHERE v = 'returning'`); n != 1 {
			t.Errorf("the RETURNING insert landed %d times, want 1", n)
		}
	})
	t.Run("Stmt.Exec", func(t *testing.T) {
		r, eB := blocked(t, func() result {
			_, err := st.ExecContext(ctx, "stmt", "default")
			return result{err: err}
		})
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkItem(t, raw, "stmt", me, eB)
	})
	t.Run("tx.Stmt", func(t *testing.T) {
		r, eB := blocked(t, func() result {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return result{err: err}
			}
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, "txstmt", "default"); err != nil {
				tx.Rollback()
				return result{err: err}
			}
			return result{err: tx.Commit()}
		})
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkItem(t, raw, "txstmt", me, eB)
	})
}

// checkItem checks that item v landed once, written while pid held the
// lane with an epoch greater than after.
func checkItem(t *testing.T, raw *sql.DB, v string, pid int, after int64) {
	t.Helper()
	var epoch, holder sql.NullInt64
	var n int
	if err := raw.QueryRow(`SELECT count(*), max(epoch), max(pid) FROM items WHERE v = ?`, v).Scan(&n, &epoch, &holder); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("item %q landed %d times, want 1", v, n)
	}
	if holder.Int64 != int64(pid) || epoch.Int64 <= after {
		t.Errorf("item %q written under holder pid %v epoch %v, want pid %d with an epoch > %d", v, holder, epoch, pid, after)
	}
}

// ---------------------------------------------------------------------------
// 5. A hand-written BEGIN is never borrowed.

func TestInterceptForeignTransaction(t *testing.T) {
	path, raw := newFile(t)
	db := openLeased(t, path)
	// A regression would make the refused writes wait for a lease that the
	// caller's own open transaction keeps the engine from writing: bound
	// them so the test fails instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stats0, err := cleolease.Stats(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	// The caller's own row, written inside its transaction on the native
	// connection (documented to bypass the lease).
	if err := conn.Raw(func(dc any) error {
		_, err := dc.(cleolease.Conn).SQLiteConn().Exec(`INSERT INTO items(v) VALUES ('before')`, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	if _, err := conn.ExecContext(ctx, insertItem, "exec", "default"); !errors.Is(err, cleolease.ErrForeignTransaction) {
		t.Errorf("Exec inside a hand-written BEGIN: %v, want ErrForeignTransaction", err)
	}
	if rows, err := conn.QueryContext(ctx, insertItem+` RETURNING id`, "query", "default"); !errors.Is(err, cleolease.ErrForeignTransaction) {
		if err == nil {
			rows.Close()
		}
		t.Errorf("INSERT … RETURNING inside a hand-written BEGIN: %v, want ErrForeignTransaction", err)
	}
	if st, err := conn.PrepareContext(ctx, insertItem); err != nil {
		t.Error(err)
	} else {
		if _, err := st.ExecContext(ctx, "stmt", "default"); !errors.Is(err, cleolease.ErrForeignTransaction) {
			t.Errorf("Stmt.Exec inside a hand-written BEGIN: %v, want ErrForeignTransaction", err)
		}
		st.Close()
	}
	// BeginTx there is refused by SQLite itself, as with go-sqlite3.
	if tx, err := conn.BeginTx(ctx, nil); err == nil || !strings.Contains(err.Error(), "within a transaction") {
		if err == nil {
			tx.Rollback()
		}
		t.Errorf("BeginTx inside a hand-written BEGIN: %v, want SQLite's 'cannot start a transaction within a transaction'", err)
	}

	// The caller's transaction is intact: its row is visible inside it,
	// not outside, and the driver took no lease for the refused writes.
	if n := count(t, connQuerier{conn}, `SELECT count(*) FROM items WHERE v = 'before'`); n != 1 {
		t.Errorf("inside the caller's transaction 'before' is seen %d times, want 1", n)
	}
	if n := count(t, raw, `SELECT count(*) FROM items`); n != 0 {
		t.Errorf("outside the caller's transaction %d items are visible before its COMMIT, want 0", n)
	}
	if st, _ := cleolease.Stats(ctx, db); st.Grants != stats0.Grants {
		t.Errorf("refused writes took %d grants", st.Grants-stats0.Grants)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatalf("the caller's COMMIT: %v", err)
	}
	if n := count(t, raw, `SELECT count(*) FROM items WHERE v = 'before'`); n != 1 {
		t.Errorf("after the caller's COMMIT 'before' landed %d times, want 1", n)
	}
	if n := count(t, raw, `SELECT count(*) FROM items`); n != 1 {
		t.Errorf("%d items landed, want only the caller's", n)
	}
	// The connection works normally afterwards.
	if _, err := conn.ExecContext(ctx, insertItem, "after", "default"); err != nil {
		t.Errorf("leased write after the caller's COMMIT: %v", err)
	}
}

// count's first parameter accepts *sql.DB; *sql.Conn needs a context.
type connQuerier struct{ c *sql.Conn }

func (q connQuerier) QueryRow(query string, args ...any) *sql.Row {
	return q.c.QueryRowContext(context.Background(), query, args...)
}

// ---------------------------------------------------------------------------
// 6. A lane broken between two transactions of a held lease.

func TestInterceptBrokenLaneCannotCommit(t *testing.T) {
	path, raw := newFile(t)
	ctx := context.Background()
	p := spawn(t, "intercept-hold", path)
	p.next(t, "READY")
	p.send("acquire")
	epoch := atoi64(t, p.next(t, "HELD"))
	p.send("tx first")
	if res := p.next(t, "RES"); res != "ok" {
		t.Fatalf("first transaction under the lease: %s", res)
	}

	// There is no exported way to reach the engine's Break from a *sql.DB
	// (db.Driver() is a *cleolease.Driver with no accessor), so the
	// administrator opens the engine on the path directly.
	eng, err := lease.Open(ctx, lease.Options{Base: mattn.For(nil), Path: path, DSN: "file:" + path + "?_busy_timeout=10000"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	broken, err := eng.Break(ctx, "main", "default", true)
	if err != nil {
		t.Fatalf("Break: %v", err)
	}
	if broken == nil || broken.PID != int64(p.pid) || broken.Epoch != epoch {
		t.Fatalf("Break broke %+v, want pid %d epoch %d", broken, p.pid, epoch)
	}

	p.send("tx second")
	if res := p.next(t, "RES"); !strings.HasPrefix(res, "lost") {
		t.Errorf("transaction after the break: %s, want ErrLeaseLost", res)
	}
	p.send("exec third")
	if res := p.next(t, "RES"); !strings.HasPrefix(res, "lost") {
		t.Errorf("autocommit Exec after the break: %s, want ErrLeaseLost", res)
	}
	if n := count(t, raw, `SELECT count(*) FROM items WHERE v IN ('second', 'third')`); n != 0 {
		t.Errorf("%d rows written under the broken lease landed, want 0", n)
	}
	if n := count(t, raw, `SELECT count(*) FROM items`); n != 1 {
		t.Errorf("%d items, want only the first transaction's", n)
	}
	p.send("release")
	p.next(t, "RELEASED")
}

// ---------------------------------------------------------------------------
// 7. A holder killed in the middle of a write transaction.

func TestInterceptKilledHolder(t *testing.T) {
	path, raw := newFile(t)
	k := spawn(t, "intercept-hold", path)
	k.next(t, "READY")
	k.send("acquire")
	eK := atoi64(t, k.next(t, "HELD"))

	// The waiter queues while K holds the lane outside any transaction
	// (inside one, nobody else can write, not even a queue row).
	w := spawn(t, "intercept-hold", path)
	w.next(t, "READY")
	w.send("acquire")
	eventually(t, "the waiter queued", func() bool { return queued(raw, w.pid) })

	k.send("begin doomed")
	k.next(t, "INTX")
	if r, ok := active(t, raw, "default"); !ok || r.pid != int64(k.pid) || r.epoch != eK {
		t.Fatalf("active row %+v (present %v), want the doomed holder %d at epoch %d", r, ok, k.pid, eK)
	}
	w.silent(t, "the doomed holder was alive")

	if err := k.Cmd.Process.Kill(); err != nil { // SIGKILL, inside its write transaction
		t.Fatal(err)
	}
	k.Cmd.Wait()

	e2 := atoi64(t, w.next(t, "HELD"))
	if e2 <= eK {
		t.Errorf("next holder's epoch %d, want > %d", e2, eK)
	}
	if ar, ok := active(t, raw, "default"); !ok || ar.pid != int64(w.pid) || ar.epoch != e2 {
		t.Errorf("active row %+v (present %v), want the waiter %d at epoch %d", ar, ok, w.pid, e2)
	}
	if n := count(t, raw, `SELECT count(*) FROM _writer_queue WHERE holder_pid IN (?, ?)`, w.pid, k.pid); n != 0 {
		t.Errorf("%d queue rows left for the new holder or the dead one", n)
	}
	if n := count(t, raw, `SELECT count(*) FROM items WHERE v = 'doomed'`); n != 0 {
		t.Errorf("the killed holder's transaction left %d rows", n)
	}
	var ic string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&ic); err != nil || ic != "ok" {
		t.Errorf("integrity_check = %q, %v", ic, err)
	}
	w.send("tx after")
	if res := w.next(t, "RES"); res != "ok" {
		t.Errorf("new holder's transaction: %s", res)
	}
	checkItem(t, raw, "after", w.pid, eK)
}

// ---------------------------------------------------------------------------
// 8. A transaction held open longer than the TTL.

func TestInterceptLongTransactionBeyondTTL(t *testing.T) {
	path, raw := newFile(t)
	dsn := path + "?_lease_ttl=300ms"
	l := spawn(t, "intercept-hold", dsn)
	l.next(t, "READY")
	l.send("acquire")
	eL := atoi64(t, l.next(t, "HELD"))

	w := spawn(t, "intercept-hold", dsn)
	w.next(t, "READY")
	w.send("acquire")
	eventually(t, "the waiter queued", func() bool { return queued(raw, w.pid) })

	// Holding the lease (no SQLite transaction): the heartbeat advances.
	r0, _ := active(t, raw, "default")
	seen := []int64{r0.heartbeat}
	eventually(t, "heartbeat_at advanced twice", func() bool {
		r, ok := active(t, raw, "default")
		if ok && r.heartbeat > seen[len(seen)-1] {
			seen = append(seen, r.heartbeat)
		}
		return len(seen) >= 3
	})

	// A write transaction under the lease, kept open until the row looks
	// expired to anyone judging by the TTL: its heartbeat is older than
	// ttl_ms (the engine's heartbeat cannot write while this transaction
	// holds SQLite's write lock), or, should a heartbeat get through, until
	// it advanced twice more.
	l.send("begin long")
	l.next(t, "INTX")
	r1, _ := active(t, raw, "default")
	beats := []int64{r1.heartbeat}
	eventually(t, "the transaction outlived the TTL", func() bool {
		r, ok := active(t, raw, "default")
		if !ok {
			return false
		}
		if r.heartbeat > beats[len(beats)-1] {
			beats = append(beats, r.heartbeat)
		}
		return time.Now().UnixMilli()-r.heartbeat > r.ttl || len(beats) >= 3
	})
	t.Logf("heartbeat_at values seen while the transaction was open: %v (ttl 300ms)", beats)
	w.silent(t, "the long transaction was open")
	if r, ok := active(t, raw, "default"); !ok || r.pid != int64(l.pid) || r.epoch != eL || r.ttl != 300 {
		t.Fatalf("active row %+v (present %v), want the long holder %d at epoch %d, ttl 300", r, ok, l.pid, eL)
	}
	if !queued(raw, w.pid) {
		t.Fatal("the waiter left the queue while the long transaction was open")
	}

	l.send("commit")
	if res := l.next(t, "RES"); res != "ok" {
		t.Fatalf("commit of the long transaction: %s", res)
	}
	checkItem(t, raw, "long", l.pid, eL-1)

	// Right after the commit the row still looks expired until the
	// holder's next heartbeat refreshes it: the waiter must not take it in
	// that window either.
	stale := beats[len(beats)-1]
	eventually(t, "the holder's heartbeat refreshed the row, or the row changed hands", func() bool {
		r, ok := active(t, raw, "default")
		return !ok || r.pid != int64(l.pid) || r.epoch != eL || r.heartbeat > stale
	})
	if r, ok := active(t, raw, "default"); !ok || r.pid != int64(l.pid) || r.epoch != eL {
		t.Fatalf("after the long commit the active row is %+v (present %v), want the live holder %d at epoch %d", r, ok, l.pid, eL)
	}
	w.silent(t, "the long holder still held its lease")
	l.send("check")
	if res := l.next(t, "RES"); res != "ok" {
		t.Fatalf("the long holder's lease after its commit: %s", res)
	}
	l.send("release")
	l.next(t, "RELEASED")
	if eW := atoi64(t, w.next(t, "HELD")); eW <= eL {
		t.Errorf("waiter's epoch %d, want > %d", eW, eL)
	}
}

// ---------------------------------------------------------------------------
// 9. database/sql's rollback on context cancellation releases the hold.

func TestInterceptCancelledTxReleases(t *testing.T) {
	path, raw := newFile(t)
	db := openLeased(t, path)
	me := os.Getpid()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// C holds the lane; this process's BeginTx queues, then the waiter W
	// queues behind it, so W is provably waiting while the transaction is
	// open (an open write transaction keeps everyone else from writing,
	// queue rows included).
	c := spawn(t, "intercept-hold", path)
	c.next(t, "READY")
	c.send("acquire")
	c.next(t, "HELD")
	type began struct {
		tx  *sql.Tx
		err error
	}
	ch := make(chan began, 1)
	go func() {
		tx, err := db.BeginTx(ctx, nil)
		ch <- began{tx, err}
	}()
	eventually(t, "BeginTx queued behind C", func() bool { return queued(raw, me) })
	w := spawn(t, "intercept-hold", path)
	w.next(t, "READY")
	w.send("acquire")
	eventually(t, "the waiter queued", func() bool { return queued(raw, w.pid) })
	c.send("release")
	c.next(t, "RELEASED")
	bg := recv(t, ch, "BeginTx once C released")
	if bg.err != nil {
		t.Fatal(bg.err)
	}
	tx := bg.tx
	if _, err := tx.ExecContext(ctx, insertItem, "cancelled", "default"); err != nil {
		t.Fatal(err)
	}
	if r, ok := active(t, raw, "default"); !ok || r.pid != int64(me) {
		t.Fatalf("active row %+v (present %v), want this process %d", r, ok, me)
	}
	w.silent(t, "the transaction was open")

	cancel() // database/sql rolls the transaction back on its own goroutine
	w.next(t, "HELD")
	if err := tx.Commit(); err == nil {
		t.Error("Commit after cancellation succeeded")
	}
	if n := count(t, raw, `SELECT count(*) FROM items WHERE v = 'cancelled'`); n != 0 {
		t.Errorf("the cancelled transaction's row landed (%d)", n)
	}
	// This process can write again once the waiter is done.
	w.send("release")
	w.next(t, "RELEASED")
	if _, err := db.ExecContext(context.Background(), insertItem, "again", "default"); err != nil {
		t.Errorf("write after the cancelled transaction: %v", err)
	}
	checkItem(t, raw, "again", me, 0)
}

// ---------------------------------------------------------------------------
// 10. Reads and ReadOnly transactions never wait for a holder.

func TestInterceptReadsNeverWait(t *testing.T) {
	path, raw := newFile(t)
	h := spawn(t, "intercept-hold", path)
	h.next(t, "READY")
	h.send("acquire")
	eH := atoi64(t, h.next(t, "HELD"))
	h.send("begin uncommitted")
	h.next(t, "INTX")

	db := openLeased(t, path)
	ctx := context.Background()
	type reads struct {
		counter, items int64
		roWriteErr     error
		err            error
	}
	done := make(chan reads, 1)
	go func() {
		var r reads
		defer func() { done <- r }()
		if r.err = db.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&r.counter); r.err != nil {
			return
		}
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			r.err = err
			return
		}
		defer tx.Rollback()
		if r.err = tx.QueryRowContext(ctx, `SELECT count(*) FROM items`).Scan(&r.items); r.err != nil {
			return
		}
		_, r.roWriteErr = tx.ExecContext(ctx, `INSERT INTO items(v) VALUES ('from a read-only tx')`)
		r.err = tx.Commit()
	}()
	// The holder keeps the lane (and its open write transaction) until we
	// tell it otherwise, so the reads must complete first.
	r := recv(t, done, "reads while another process holds the lane")
	if r.err != nil {
		t.Fatalf("reads: %v", r.err)
	}
	if r.counter != 0 || r.items != 0 {
		t.Errorf("reads saw counter %d, %d items; want 0 and 0 (the holder's write is uncommitted)", r.counter, r.items)
	}
	if r.roWriteErr == nil {
		t.Error("a write inside a ReadOnly transaction succeeded without the lease")
	}
	if ar, ok := active(t, raw, "default"); !ok || ar.pid != int64(h.pid) || ar.epoch != eH {
		t.Fatalf("active row %+v (present %v), want the holder %d still at epoch %d", ar, ok, h.pid, eH)
	}
	if st, err := cleolease.Stats(ctx, db); err != nil || st.Grants != 0 {
		t.Errorf("reads took %d grants (%v), want 0", st.Grants, err)
	}
	if queued(raw, os.Getpid()) {
		t.Error("the reader queued for the lease")
	}
	h.send("commit")
	if res := h.next(t, "RES"); res != "ok" {
		t.Fatalf("holder's commit: %s", res)
	}
	if n := count(t, raw, `SELECT count(*) FROM items WHERE v = 'from a read-only tx'`); n != 0 {
		t.Errorf("the read-only transaction's write landed")
	}
}

// ---------------------------------------------------------------------------
// 11. Lanes are independent; one lane has one holder.

func TestInterceptLanes(t *testing.T) {
	path, raw := newFile(t)
	a := spawn(t, "intercept-hold", path, "CLEOLEASE_LANE=a")
	b := spawn(t, "intercept-hold", path, "CLEOLEASE_LANE=b")
	a2 := spawn(t, "intercept-hold", path, "CLEOLEASE_LANE=a")
	for _, p := range []*proc{a, b, a2} {
		p.next(t, "READY")
	}
	a.send("acquire")
	eA := atoi64(t, a.next(t, "HELD"))
	b.send("acquire")
	b.next(t, "HELD")
	ra, okA := active(t, raw, "a")
	rb, okB := active(t, raw, "b")
	if !okA || !okB || ra.pid != int64(a.pid) || rb.pid != int64(b.pid) {
		t.Fatalf("active rows a=%+v (%v) b=%+v (%v), want lanes a and b held by %d and %d at once", ra, okA, rb, okB, a.pid, b.pid)
	}
	// A write on lane b goes through while lane a is held.
	b.send("tx on-b")
	if res := b.next(t, "RES"); res != "ok" {
		t.Fatalf("write on lane b while a is held: %s", res)
	}
	checkItem(t, raw, "on-b", b.pid, 0)

	// The same lane cannot be held twice.
	a2.send("acquire")
	eventually(t, "the second holder of lane a queued", func() bool { return queued(raw, a2.pid) })
	a2.silent(t, "lane a was held")
	if r, _ := active(t, raw, "a"); r.pid != int64(a.pid) {
		t.Fatalf("lane a changed hands to %d while held", r.pid)
	}
	a.send("release")
	a.next(t, "RELEASED")
	if e := atoi64(t, a2.next(t, "HELD")); e <= eA {
		t.Errorf("second holder of lane a got epoch %d, want > %d", e, eA)
	}
	if r, ok := active(t, raw, "b"); !ok || r.pid != int64(b.pid) {
		t.Errorf("lane b lost its holder: %+v (%v)", r, ok)
	}
}
