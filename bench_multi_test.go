package cleolease_test

// Multi-process benchmarks: the workloads of `cleolease bench` (and of
// /work/shared/tools/contention) as `go test -bench` sub-benchmarks, raw
// go-sqlite3 and cleolease side by side in one benchmark function, so that
// benchstat can compare them. The workers are re-executed test binaries
// playing the "bench-rmw" role (see testmain_test.go).
//
// Sub-benchmark names use key=value parts (sync=…, load=…, driver=…), the
// form benchstat can project on; for example
//
//	go test -run XXX -bench 'Contention|Resources' -benchtime 1x -count 5 . | tee bench.txt
//	benchstat -col /driver bench.txt
//
// prints raw and cleolease in two columns with the difference and its
// p-value for every workload and metric.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/proctest"
)

var benchDuration = flag.Duration("contention.duration", 2*time.Second,
	"how long each round of BenchmarkContention and BenchmarkResources writes")

func init() {
	roles["bench-rmw"] = roleBenchRMW
}

// benchRawQuery is raw go-sqlite3 at its best for writers (as in
// cmd/cleolease bench): BEGIN IMMEDIATE and the pragmas cleolease applies by
// default. %s is the synchronous level.
const benchRawQuery = "_busy_timeout=30000&_journal_mode=WAL&_synchronous=%s&_fk=1&_txlock=immediate"

// benchChildResult is what one bench-rmw child reports on its RESULT line.
type benchChildResult struct {
	Commits    int64    `json:"commits"`
	Errors     int64    `json:"errors"`
	FirstError string   `json:"first_error,omitempty"`
	LatUS      []int64  `json:"lat_us"`  // committed transactions, begin to commit
	HWMkB      int64    `json:"hwm_kb"`  // VmHWM after the run, before db.Close
	RSSkB      int64    `json:"rss_kb"`  // VmRSS after the run, before db.Close
	FDsBefore  int      `json:"fds_pre"` // open descriptors before sql.Open
	FDsAfter   int      `json:"fds_end"` // open descriptors after db.Close
	NewFDs     []string `json:"new_fds,omitempty"`
}

// roleBenchRMW opens CLEOLEASE_DSN with CLEOLEASE_DRIVER ("sqlite3" or
// "cleolease"), says "READY pid", waits for "go" on stdin, then runs
// CLEOLEASE_G goroutines of read-modify-write transactions (CLEOLEASE_WORK
// of time.Sleep inside each) for CLEOLEASE_DURATION, closes the database
// and says "RESULT {json}" (a benchChildResult). CLEOLEASE_PROC is its
// index, written to the log rows.
func roleBenchRMW() int {
	fail := func(err error) int {
		fmt.Println("ERR", err)
		return 1
	}
	drv := os.Getenv("CLEOLEASE_DRIVER")
	proc, err := strconv.Atoi(os.Getenv("CLEOLEASE_PROC"))
	if err != nil {
		return fail(err)
	}
	goroutines, err := strconv.Atoi(os.Getenv("CLEOLEASE_G"))
	if err != nil {
		return fail(err)
	}
	work, err := time.ParseDuration(os.Getenv("CLEOLEASE_WORK"))
	if err != nil {
		return fail(err)
	}
	d, err := time.ParseDuration(os.Getenv("CLEOLEASE_DURATION"))
	if err != nil {
		return fail(err)
	}

	// Make sure the Go runtime's poller (an epoll and an eventfd
	// descriptor, kept for the life of the process) has started, by
	// creating a pollable file, so that the descriptor counts below see
	// only what the driver leaves behind.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before, err := benchFDs()
	if err != nil {
		return fail(err)
	}

	ctx := context.Background()
	db, err := sql.Open(drv, os.Getenv("CLEOLEASE_DSN"))
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		return fail(err)
	}
	if drv == "cleolease" {
		ctx = cleolease.WithLane(ctx, "main", "bench")
	}
	fmt.Println("READY", os.Getpid())
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return fail(fmt.Errorf("want go, got %q (%v)", in.Text(), in.Err()))
	}

	res := benchChildResult{FDsBefore: len(before)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for g := range goroutines {
		wg.Go(func() {
			var lat []int64
			var commits, errs int64
			first := ""
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := benchRMW(ctx, db, proc, g, work); err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				lat = append(lat, time.Since(t0).Microseconds())
				commits++
			}
			mu.Lock()
			defer mu.Unlock()
			res.Commits += commits
			res.Errors += errs
			res.LatUS = append(res.LatUS, lat...)
			if res.FirstError == "" {
				res.FirstError = first
			}
		})
	}
	wg.Wait()
	if res.HWMkB, res.RSSkB, err = benchVM(); err != nil {
		return fail(err)
	}
	if err := db.Close(); err != nil {
		return fail(err)
	}
	after, err := benchFDs()
	if err != nil {
		return fail(err)
	}
	res.FDsAfter = len(after)
	for fd, target := range after {
		if before[fd] != target {
			res.NewFDs = append(res.NewFDs, fd+" -> "+target)
		}
	}
	out, err := json.Marshal(res)
	if err != nil {
		return fail(err)
	}
	fmt.Println("RESULT", string(out))
	return 0
}

// benchRMW is one transaction of the workload, as in the contention tool:
// read the counter, optionally work, write it back plus one, log the write.
func benchRMW(ctx context.Context, db *sql.DB, proc, g int, work time.Duration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var n int64
	err = tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n)
	if err == nil {
		if work > 0 {
			time.Sleep(work) // simulated work inside the transaction
		}
		_, err = tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO log(proc, g, seen, at) VALUES (?, ?, ?, ?)`, proc, g, n, time.Now().UnixNano())
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// benchFDs lists this process's open descriptors and what they point to
// (the one os.ReadDir itself uses is gone by the time it is read).
func benchFDs() (map[string]string, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			out[e.Name()] = target
		}
	}
	return out, nil
}

// benchVM returns VmHWM (peak resident set) and VmRSS of this process, in kB.
func benchVM() (hwm, rss int64, err error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/self/status %s: %v", key, err)
		}
		if key == "VmHWM" {
			hwm = kb
		} else {
			rss = kb
		}
	}
	if hwm == 0 || rss == 0 {
		return 0, 0, fmt.Errorf("no VmHWM/VmRSS in /proc/self/status")
	}
	return hwm, rss, nil
}

// benchCreate makes a fresh counter database in a new temporary directory
// with the raw driver and returns its path.
func benchCreate(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
		INSERT INTO counter VALUES (1, 0);
		CREATE TABLE log(id INTEGER PRIMARY KEY, proc INTEGER, g INTEGER, seen INTEGER, at INTEGER)`); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchVerify fails b unless the counter and the log both equal the commits
// the children acknowledged (no lost or phantom update).
func benchVerify(b *testing.B, path string, acked int64) {
	b.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n, rows int64
	if err := db.QueryRow(`SELECT (SELECT n FROM counter WHERE id = 1), (SELECT count(*) FROM log)`).Scan(&n, &rows); err != nil {
		b.Fatal(err)
	}
	if n != acked || rows != acked {
		b.Errorf("counter %d, log rows %d, acknowledged commits %d: %d lost updates", n, rows, acked, acked-n)
	}
}

// benchRound starts procs bench-rmw children on dsn with the driver, lets
// them go together once all are ready, and returns their results.
func benchRound(b *testing.B, driver, dsn string, procs, goroutines int, work, d time.Duration) []benchChildResult {
	b.Helper()
	children := make([]*child, procs)
	for i := range children {
		c := startChild(b, "bench-rmw", dsn,
			"CLEOLEASE_DRIVER="+driver,
			"CLEOLEASE_PROC="+strconv.Itoa(i),
			"CLEOLEASE_G="+strconv.Itoa(goroutines),
			"CLEOLEASE_WORK="+work.String(),
			"CLEOLEASE_DURATION="+d.String(),
			proctest.GoraceNoExitSleep()) // race-built children: no 1 s sleep at exit
		c.Out.Buffer(make([]byte, 0, 64<<10), 64<<20) // RESULT lines carry every latency
		children[i] = c
	}
	for _, c := range children {
		c.expect("READY")
	}
	for _, c := range children {
		c.send("go")
	}
	results := make([]benchChildResult, procs)
	for i, c := range children {
		if err := json.Unmarshal([]byte(c.expect("RESULT")), &results[i]); err != nil {
			b.Fatal(err)
		}
		if err := c.Cmd.Wait(); err != nil {
			b.Errorf("child %d: %v", i, err)
		}
		if results[i].FirstError != "" {
			b.Logf("%s child %d: %d errors, first: %s", driver, i, results[i].Errors, results[i].FirstError)
		}
	}
	return results
}

// benchPercentile is the p-quantile of sorted latencies in milliseconds.
func benchPercentile(sorted []int64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(p*float64(len(sorted)-1))]) / 1000
}

// BenchmarkContention measures several processes writing one SQLite file,
// on raw go-sqlite3 (BEGIN IMMEDIATE via _txlock=immediate, WAL, 30 s busy
// timeout: raw at its best) and on cleolease (lane main/bench), with
// synchronous=NORMAL and with synchronous=FULL. Every transaction reads a
// counter, writes it back plus one and inserts a log row, so lost updates
// show in the data: the benchmark fails unless the counter and the log
// equal the commits the processes acknowledged. Workloads:
//
//	load=4x2      4 processes × 2 goroutines, no work inside the transaction
//	load=8x1-1ms  8 processes × 1 goroutine, 1 ms of time.Sleep inside each
//
// Each iteration of b.N is one round: a fresh database, the processes
// started, released together once all have opened it, and run for
// -contention.duration (default 2s). Metrics, over all b.N rounds:
// commits/s (all processes), p50-ms, p99-ms and max-ms (latency of
// committed transactions, begin to commit, pooled over the rounds),
// fairness (min/max commits per process, mean of the rounds), errors
// (failed transactions per round, mean) and peak-RSS-MB (the largest
// VmHWM of any process, in MiB). ns/op, the round's wall time, is not
// reported. It is meant to be run once per round and repeated:
//
//	go test -run XXX -bench Contention -benchtime 1x -count 5 . | tee contention.txt
//	benchstat -col /driver contention.txt
func BenchmarkContention(b *testing.B) {
	loads := []struct {
		name              string
		procs, goroutines int
		work              time.Duration
	}{
		{"4x2", 4, 2, 0},
		{"8x1-1ms", 8, 1, time.Millisecond},
	}
	for _, level := range []string{"NORMAL", "FULL"} {
		b.Run("sync="+strings.ToLower(level), func(b *testing.B) {
			for _, l := range loads {
				b.Run("load="+l.name, func(b *testing.B) {
					for _, driver := range []string{"raw", "cleolease"} {
						b.Run("driver="+driver, func(b *testing.B) {
							benchContention(b, driver, level, l.procs, l.goroutines, l.work)
						})
					}
				})
			}
		})
	}
}

// benchContention runs b.N rounds of one BenchmarkContention workload on
// driver ("raw" or "cleolease") at synchronous level and reports the
// metrics BenchmarkContention describes.
func benchContention(b *testing.B, driver, level string, procs, goroutines int, work time.Duration) {
	d := *benchDuration
	var (
		commits, errs int64
		lat           []int64
		fairness      float64
		peakKB        int64
	)
	for i := 0; i < b.N; i++ {
		path := benchCreate(b)
		name, dsn := "sqlite3", "file:"+path+"?"+fmt.Sprintf(benchRawQuery, level)
		if driver == "cleolease" {
			name, dsn = "cleolease", "file:"+path
			if level != "NORMAL" {
				dsn += "?_synchronous=" + level
			}
		}
		results := benchRound(b, name, dsn, procs, goroutines, work, d)
		var acked, lo, hi int64 = 0, -1, 0
		for _, r := range results {
			acked += r.Commits
			errs += r.Errors
			lat = append(lat, r.LatUS...)
			peakKB = max(peakKB, r.HWMkB)
			if lo < 0 || r.Commits < lo {
				lo = r.Commits
			}
			hi = max(hi, r.Commits)
		}
		commits += acked
		if hi > 0 {
			fairness += float64(lo) / float64(hi)
		}
		benchVerify(b, path, acked)
	}
	slices.Sort(lat)
	rounds := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(commits)/(rounds*d.Seconds()), "commits/s")
	b.ReportMetric(benchPercentile(lat, 0.50), "p50-ms")
	b.ReportMetric(benchPercentile(lat, 0.99), "p99-ms")
	b.ReportMetric(benchPercentile(lat, 1), "max-ms")
	b.ReportMetric(fairness/rounds, "fairness")
	b.ReportMetric(float64(errs)/rounds, "errors")
	b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
}

// BenchmarkResources measures what one process costs in memory with raw
// go-sqlite3 and with cleolease (the target: a cleolease process holds at
// most a few MB more). One process × 1 goroutine runs the uncontended
// read-modify-write transaction (as BenchmarkContention, no work) for
// -contention.duration (default 2s) and reports, per round: peak-RSS-MB
// (VmHWM, MiB) and end-RSS-MB (VmRSS when the loop ends, before db.Close),
// commits/s, and fds-left: descriptors open after db.Close minus those
// open before sql.Open. The cleolease run fails if fds-left is above 0.
// Over b.N rounds the RSS figures are the largest, commits/s the mean and
// fds-left the largest. ns/op is not reported. Run it as
//
//	go test -run XXX -bench Resources -benchtime 1x -count 5 . | tee resources.txt
//	benchstat -col /driver resources.txt
//
// Under -race the figures include the race detector's shadow memory.
func BenchmarkResources(b *testing.B) {
	for _, driver := range []string{"raw", "cleolease"} {
		b.Run("driver="+driver, func(b *testing.B) {
			d := *benchDuration
			var commits, hwm, rss int64
			fdsLeft := 0
			for i := 0; i < b.N; i++ {
				path := benchCreate(b)
				name, dsn := "sqlite3", "file:"+path+"?"+fmt.Sprintf(benchRawQuery, "NORMAL")
				if driver == "cleolease" {
					name, dsn = "cleolease", "file:"+path
				}
				r := benchRound(b, name, dsn, 1, 1, 0, d)[0]
				benchVerify(b, path, r.Commits)
				commits += r.Commits
				hwm, rss = max(hwm, r.HWMkB), max(rss, r.RSSkB)
				left := r.FDsAfter - r.FDsBefore
				fdsLeft = max(fdsLeft, left)
				if len(r.NewFDs) > 0 {
					b.Logf("%s: descriptors open after db.Close that were not before sql.Open: %v", driver, r.NewFDs)
				}
				if driver == "cleolease" && left > 0 {
					b.Errorf("cleolease: %d descriptors open before sql.Open, %d after db.Close", r.FDsBefore, r.FDsAfter)
				}
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(commits)/(float64(b.N)*d.Seconds()), "commits/s")
			b.ReportMetric(float64(hwm)/1024, "peak-RSS-MB")
			b.ReportMetric(float64(rss)/1024, "end-RSS-MB")
			b.ReportMetric(float64(fdsLeft), "fds-left")
		})
	}
}
