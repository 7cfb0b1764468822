//go:build linux

package cleolease_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/litefstest"
	"github.com/cleocode/cleolease/internal/testdir"
)

// LiteFS (issue 23, item 4): under contention on the primary, the lease's
// bookkeeping rides in the data transactions — the grant is written in
// the holder's last commit (Pass) and confirmed in the waiter's own
// BEGIN IMMEDIATE — so the common path adds no replicated transaction of
// its own.

func init() { roles["litefs-contend"] = roleContend }

// roleContend runs one writer of the 8 × 1 workload: each write is a
// BeginTx read-modify-write with CLEOLEASE_HOLD of work inside (the
// contention tool's), CLEOLEASE_N writes or, with CLEOLEASE_DUR, for that
// long. Driver CLEOLEASE_DRIVER (default cleolease). It prints "READY",
// waits for "go", then "RESULT commits errors leaseWrites passedInCommit
// handoffs claims first-error" (the lease counters -1 without cleolease).
func roleContend() int {
	ctx := context.Background()
	drv := os.Getenv("CLEOLEASE_DRIVER")
	if drv == "" {
		drv = "cleolease"
	}
	n, _ := strconv.Atoi(os.Getenv("CLEOLEASE_N"))
	dur, _ := time.ParseDuration(os.Getenv("CLEOLEASE_DUR"))
	hold, _ := time.ParseDuration(os.Getenv("CLEOLEASE_HOLD"))
	db, err := sql.Open(drv, os.Getenv("CLEOLEASE_DSN"))
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		say("ERR", err)
		return 1
	}
	defer db.Close()
	say("READY")
	var line string
	if _, err := fmt.Scanln(&line); err != nil || line != "go" {
		return 1
	}
	commits, fails, first := 0, 0, ""
	end := time.Now().Add(dur)
	for i := 0; (dur > 0 && time.Now().Before(end)) || (dur == 0 && i < n); i++ {
		if err := holdIncrement(ctx, db, hold); err != nil {
			fails++
			if first == "" {
				first = err.Error()
			}
			continue
		}
		commits++
	}
	st := cleolease.LeaseStats{LeaseWrites: -1, PassedInCommit: -1, Handoffs: -1, Claims: -1}
	if drv == "cleolease" {
		st, _ = cleolease.Stats(ctx, db)
	}
	say("RESULT", commits, fails, st.LeaseWrites, st.PassedInCommit, st.Handoffs, st.Claims, first)
	return 0
}

// holdIncrement is the contention tool's write: read the counter, work for
// hold, write it back plus one and log a row, in one BeginTx.
func holdIncrement(ctx context.Context, db *sql.DB, hold time.Duration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
		tx.Rollback()
		return err
	}
	time.Sleep(hold) // the simulated work inside the transaction
	if _, err := tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
		tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO log(who, n) VALUES ('w', ?)`, n); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// contendResult sums the RESULT lines of one contended run.
type contendResult struct {
	commits, fails                     int
	minC, maxC                         int
	leaseWrites, passed, handoffs, got int64
	first                              string
}

// runContended creates name on the cluster's primary (go-sqlite3, WAL),
// runs procs writers of driver drv (txlock: go-sqlite3 with
// _txlock=immediate) with hold of work per write, each for n writes or
// dur, and sums what they report.
func runContended(t testing.TB, c *litefstest.Cluster, name, drv string, procs, n int, dur, hold time.Duration) contendResult {
	t.Helper()
	path := c.Primary.Path(name)
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
		INSERT INTO counter VALUES (1, 0);
		CREATE TABLE log(id INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT NOT NULL, n INTEGER NOT NULL)`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000"
	env := []string{"TMPDIR=" + testdir.New(t), "CLEOLEASE_N=" + strconv.Itoa(n), "CLEOLEASE_DUR=" + dur.String(), "CLEOLEASE_HOLD=" + hold.String()}
	if drv == "txlock" {
		dsn += "&_txlock=immediate"
		env = append(env, "CLEOLEASE_DRIVER=sqlite3")
	}
	var ws []*child
	for range procs {
		ws = append(ws, startChild(t, "litefs-contend", dsn, env...))
	}
	for _, w := range ws {
		w.expect("READY")
	}
	for _, w := range ws {
		w.send("go")
	}
	r := contendResult{minC: 1 << 30}
	for _, w := range ws {
		f := strings.Fields(w.expect("RESULT"))
		v := make([]int64, 6)
		for i := range v {
			v[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		r.commits += int(v[0])
		r.fails += int(v[1])
		r.minC, r.maxC = min(r.minC, int(v[0])), max(r.maxC, int(v[0]))
		r.leaseWrites += v[2]
		r.passed += v[3]
		r.handoffs += v[4]
		r.got += v[5]
		if v[1] > 0 && r.first == "" {
			r.first = strings.Join(f[6:], " ")
		}
	}
	return r
}

// Four processes × 40 writes, 1 ms of work in each, contend for the lane
// on the LiteFS primary. Counted, not timed: the engine's own write
// transactions (claims, queue rows, hand-offs, heartbeats, releases, the
// sidecar proof) stay a small fraction of the data commits — each process
// pays its bootstrap, its first claim and its exit — and most hand-offs
// ride in the holder's data commit. Before the fix (grant at 3a56471)
// the default 2 ms slice refused nearly every in-commit hand-off and
// waiters past 100 ms wrote queue rows, which ruled the rest out: 1.6–1.8
// lease transactions per data commit.
func TestLiteFSContendedPathWritesNoLeaseTransactions(t *testing.T) {
	c := litefstest.Start(t)
	const procs, n = 4, 40
	r := runContended(t, c, "contend.db", "cleolease", procs, n, 0, time.Millisecond)
	t.Logf("%d commits: %d lease transactions, %d hand-offs, %d inside a data commit, %d claims",
		r.commits, r.leaseWrites, r.handoffs, r.passed, r.got)
	if r.commits != procs*n || r.fails != 0 {
		t.Fatalf("%d commits, %d errors (first: %s); want %d, 0", r.commits, r.fails, r.first, procs*n)
	}
	if r.leaseWrites*4 > int64(r.commits) {
		t.Errorf("%d lease transactions for %d data commits; want at most one per four", r.leaseWrites, r.commits)
	}
	if r.passed*2 < r.handoffs {
		t.Errorf("%d of %d hand-offs inside a data commit; want at least half", r.passed, r.handoffs)
	}
}

// BenchmarkLiteFSContention runs the 8 × 1 workload (8 processes, one
// writer each, 1 ms of work in each BeginTx) on the primary of a two-node
// LiteFS cluster for 3 s with go-sqlite3 txlock (_txlock=immediate) and
// then with cleolease (no parameter), b.N rounds, each in a fresh
// database file, and reports both rates, their ratio, cleolease's
// fairness (fewest ÷ most commits of a process) and its lease
// transactions per data commit. Skips naming what is missing.
func BenchmarkLiteFSContention(b *testing.B) {
	c := litefstest.Start(b)
	const procs, dur, hold = 8, 3 * time.Second, time.Millisecond
	var txl, cl, fair, lw float64
	for i := 0; i < b.N; i++ {
		t := runContended(b, c, fmt.Sprintf("txlock-%d.db", i), "txlock", procs, 0, dur, hold)
		r := runContended(b, c, fmt.Sprintf("cleolease-%d.db", i), "cleolease", procs, 0, dur, hold)
		if t.fails != 0 || r.fails != 0 {
			b.Fatalf("errors: txlock %d (%s), cleolease %d (%s)", t.fails, t.first, r.fails, r.first)
		}
		txl += float64(t.commits) / dur.Seconds()
		cl += float64(r.commits) / dur.Seconds()
		fair += float64(r.minC) / float64(max(r.maxC, 1))
		lw += float64(r.leaseWrites) / float64(max(r.commits, 1))
	}
	nf := float64(b.N)
	b.ReportMetric(txl/nf, "txlock-commits/s")
	b.ReportMetric(cl/nf, "cleolease-commits/s")
	b.ReportMetric(cl/txl, "ratio")
	b.ReportMetric(fair/nf, "fairness")
	b.ReportMetric(lw/nf, "leasetx/commit")
}
