package cleolease_test

// Multi-process benchmarks: the loads of "cleolease bench" as "go test
// -bench" sub-benchmarks, with
// the peers of internal/workload side by side in one benchmark function,
// so that benchstat can compare them: txlock (raw go-sqlite3, BeginTx with
// _txlock=immediate), flock (txlock inside an exclusive flock on a side
// file, the do-it-yourself fix) and cleolease. The workers are re-executed
// test binaries playing the "bench-rmw" role (see testmain_test.go) and
// speak internal/workload's protocol.
//
// Sub-benchmark names use key=value parts (sync=…, load=…, driver=…), the
// form benchstat can project on; for example
//
//	go test -run '^$' -bench 'Contention|Resources' -benchtime 1x -count 5 . | tee bench.txt
//	benchstat -col /driver bench.txt
//
// prints the peers in columns with the differences and their p-values for
// every load and metric.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/internal/workload"
)

var (
	benchDuration = flag.Duration("contention.duration", 2*time.Second,
		"how long each round of BenchmarkContention and BenchmarkResources writes")
	benchScaling = flag.Bool("contention.scaling", false,
		"BenchmarkContention: add the scaling loads (16 and 32 processes, 1 ms of work)")
	benchFull = flag.Bool("contention.full", true,
		"BenchmarkContention: measure synchronous=FULL as well as NORMAL")
)

func init() {
	roles["bench-rmw"] = roleBenchRMW
}

// roleBenchRMW is one worker of BenchmarkContention and
// BenchmarkResources: it opens CLEOLEASE_DSN (a file path) as the peer of
// the workload.Spec in CLEOLEASE_SPEC (JSON) does and runs it
// (workload.Worker.Measure: OPENED, GO, progress, RESULT). Its Result
// carries, in Extra, hwm_kb and rss_kb (VmHWM and VmRSS after the run,
// before db.Close), fds_pre (open descriptors before the open) and
// fds_end (after db.Close), and in Notes the descriptors left open (on
// Linux; elsewhere it reports no Extra).
func roleBenchRMW() int {
	fail := func(err error) int {
		fmt.Println("ERR", err)
		return 1
	}
	var s workload.Spec
	if err := json.Unmarshal([]byte(os.Getenv("CLEOLEASE_SPEC")), &s); err != nil {
		return fail(err)
	}
	path := os.Getenv("CLEOLEASE_DSN")

	// Make sure the Go runtime's poller (an epoll and an eventfd
	// descriptor, kept for the life of the process) has started, by
	// creating a pollable file, so that the descriptor counts below see
	// only what the driver leaves behind.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before, fdErr := benchFDs() // Linux only: elsewhere no resource figures
	ctx := context.Background()
	db, err := workload.Open(ctx, s.Peer, path, s.Sync)
	if err != nil {
		return fail(err)
	}
	w := workload.NewWorker(os.Stdin, os.Stdout)
	res, err := w.Measure(ctx, db, s, path)
	if err != nil {
		return fail(err)
	}
	hwm, rss, vmErr := benchVM()
	var leaseWrites, passes int64 = -1, -1
	var st cleolease.LeaseStats
	if s.Peer == workload.Cleolease {
		var err error
		if st, err = cleolease.Stats(ctx, db); err == nil {
			leaseWrites, passes = st.LeaseWrites, st.PassedInCommit
		}
	}
	if err := db.Close(); err != nil {
		return fail(err)
	}
	after, err := benchFDs()
	if fdErr == nil && err == nil && vmErr == nil {
		res.Extra = map[string]int64{"hwm_kb": hwm, "rss_kb": rss, "fds_pre": int64(len(before)), "fds_end": int64(len(after))}
		if leaseWrites >= 0 {
			res.Extra["lease_writes"], res.Extra["passes"] = leaseWrites, passes
			res.Extra["handoffs"], res.Extra["claims"], res.Extra["confirmed"] = st.Handoffs, st.Claims, st.Confirmed
		}
		for fd, target := range after {
			if before[fd] != target {
				res.Notes = append(res.Notes, fd+" -> "+target)
			}
		}
	}
	if err := w.Report(res); err != nil {
		return fail(err)
	}
	return 0
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

// benchRound runs one round of s (Index set per process) on a fresh
// counter database with procs bench-rmw workers, released together once
// all have opened it, and returns their results and their lost updates.
func benchRound(b *testing.B, s workload.Spec, procs int) ([]workload.Result, int64) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(testdir.New(b), "bench.db")
	if err := workload.CreateCounter(ctx, path); err != nil {
		b.Fatal(err)
	}
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		s.Index = i
		spec, err := json.Marshal(s)
		if err != nil {
			b.Fatal(err)
		}
		cmds[i] = proctest.Command("CLEOLEASE_ROLE=bench-rmw", "CLEOLEASE_DSN="+path, "CLEOLEASE_SPEC="+string(spec),
			proctest.GoraceNoExitSleep()) // race-built children: no 1 s sleep at exit
	}
	f, err := workload.StartFleet(cmds)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.Kill)
	results, err := f.Measure(s.Duration, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Wait(); err != nil {
		b.Error(err)
	}
	var acked int64
	for _, r := range results {
		acked += r.Commits
		for class, msg := range r.Samples {
			b.Logf("%s worker %d: %d %s errors, first: %s", s.Peer, r.Index, r.Errors[class], class, msg)
		}
	}
	lost, err := workload.VerifyCounter(ctx, mattn.For(nil), path, acked)
	if err != nil {
		b.Fatal(err)
	}
	if lost != 0 {
		b.Errorf("%s: %d lost updates (counter or log rows differ from the %d acknowledged commits)", s.Peer, lost, acked)
	}
	return results, lost
}

// BenchmarkContention measures several processes writing one SQLite file
// (workload.Loads: 1x1, 1x8, 4x2, 8x1-1ms, and with -contention.scaling
// 16x1-1ms and 32x1-1ms) for each peer of the load (workload.Load.Peers):
// txlock (raw go-sqlite3, BeginTx with _txlock=immediate, WAL, 30 s busy
// timeout: raw at its best), flock (txlock inside an exclusive flock on a
// side file, the do-it-yourself fix; where flock(2) exists), pool1 (txlock
// on one pooled connection; loads of one process) and cleolease (lane
// main/bench), with synchronous=NORMAL and (unless -contention.full=false)
// FULL. Every
// transaction reads a counter, writes it back plus one and inserts a log
// row, so lost updates show in the data: the benchmark fails unless the
// counter and the log equal the commits the processes acknowledged.
//
// Each iteration of b.N is one round: a fresh database, the processes
// started, released together once all have opened it, and run for
// -contention.duration (default 2s). Metrics, over all b.N rounds:
// commits/s (all processes), p50-ms, p99-ms and max-ms (latency of
// committed transactions, begin to commit, pooled over the rounds),
// fairness (min/max commits per process, mean of the rounds), errors
// (failed transactions per round, mean), lost (lost updates, total) and
// peak-RSS-MB (the largest VmHWM of any process, in MiB). ns/op, the
// round's wall time, is not reported. It is meant to be run once per round
// and repeated:
//
//	go test -run '^$' -bench Contention -benchtime 1x -count 5 . | tee contention.txt
//	benchstat -col /driver contention.txt
func BenchmarkContention(b *testing.B) {
	levels := []string{"NORMAL"}
	if *benchFull {
		levels = append(levels, "FULL")
	}
	for _, level := range levels {
		b.Run("sync="+strings.ToLower(level), func(b *testing.B) {
			for _, l := range workload.Loads {
				if l.Scaling && !*benchScaling || l.Short || l.Quiet {
					continue // (Short loads start a process per write: cleolease bench runs them)
				}
				b.Run("load="+l.ID, func(b *testing.B) {
					for _, peer := range l.Peers() {
						b.Run("driver="+string(peer), func(b *testing.B) {
							benchContention(b, workload.Spec{Peer: peer, Sync: level, Workload: "counter",
								Goroutines: l.Goroutines, Duration: *benchDuration, Work: l.Work, Lane: "bench"}, l.Procs)
						})
					}
				})
			}
		})
	}
}

// benchContention runs b.N rounds of s on procs processes and reports the
// metrics BenchmarkContention describes.
func benchContention(b *testing.B, s workload.Spec, procs int) {
	var all []workload.Result
	var fairness float64
	var errs, lost int64
	for i := 0; i < b.N; i++ {
		results, l := benchRound(b, s, procs)
		round := workload.Summarize(results, s.Goroutines, s.Duration)
		fairness += round.Fairness
		errs += round.Errs()
		lost += l
		all = append(all, results...)
	}
	rounds := float64(b.N)
	f := workload.Summarize(all, s.Goroutines, time.Duration(b.N)*s.Duration)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(f.CommitsPerSec, "commits/s")
	b.ReportMetric(ms(f.P50), "p50-ms")
	b.ReportMetric(ms(f.P99), "p99-ms")
	b.ReportMetric(ms(f.Max), "max-ms")
	b.ReportMetric(fairness/rounds, "fairness")
	b.ReportMetric(float64(errs)/rounds, "errors")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(f.PeakRSSkB)/1024, "peak-RSS-MB")
	if s.Peer == workload.Cleolease {
		// The engine's own write transactions (claims, hand-offs, queue
		// rows, heartbeats: each a replicated transaction on LiteFS) and
		// the hand-offs carried inside a data commit, per data commit.
		// Hand-offs (in a commit or not), claim transactions and grants
		// confirmed in the caller's own transaction, per data commit.
		var writes, passes, handoffs, claims, confirmed, commits int64
		for _, r := range all {
			writes, passes, commits = writes+r.Extra["lease_writes"], passes+r.Extra["passes"], commits+r.Commits
			handoffs, claims, confirmed = handoffs+r.Extra["handoffs"], claims+r.Extra["claims"], confirmed+r.Extra["confirmed"]
		}
		if commits > 0 {
			per := func(n int64) float64 { return float64(n) / float64(commits) }
			b.ReportMetric(per(writes), "leasetx/commit")
			b.ReportMetric(per(passes), "passes/commit")
			b.ReportMetric(per(handoffs), "handoffs/commit")
			b.ReportMetric(per(claims), "claims/commit")
			b.ReportMetric(per(confirmed), "confirmed/commit")

		}
	}
}

// BenchmarkResources measures what one process costs in memory with raw
// go-sqlite3 (txlock) and with cleolease (the target: a cleolease process
// holds at most a few MB more). One process × 1 goroutine runs the
// uncontended counter transaction for -contention.duration (default 2s)
// and reports, per round: peak-RSS-MB (VmHWM, MiB) and end-RSS-MB (VmRSS
// when the loop ends, before db.Close), commits/s, and fds-left:
// descriptors open after db.Close minus those open before sql.Open. The
// cleolease run fails if fds-left is above 0. Over b.N rounds the RSS
// figures are the largest, commits/s the mean and fds-left the largest.
// ns/op is not reported. Linux only (it reads /proc/self). Run it as
//
//	go test -run '^$' -bench Resources -benchtime 1x -count 5 . | tee resources.txt
//	benchstat -col /driver resources.txt
//
// Under -race the figures include the race detector's shadow memory.
func BenchmarkResources(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self")
	}
	for _, peer := range []workload.Peer{workload.TxLock, workload.Cleolease} {
		b.Run("driver="+string(peer), func(b *testing.B) {
			s := workload.Spec{Peer: peer, Workload: "counter", Goroutines: 1, Duration: *benchDuration}
			var commits, hwm, rss, fdsLeft int64
			for i := 0; i < b.N; i++ {
				results, _ := benchRound(b, s, 1)
				r := results[0]
				commits += r.Commits
				hwm, rss = max(hwm, r.Extra["hwm_kb"]), max(rss, r.Extra["rss_kb"])
				left := r.Extra["fds_end"] - r.Extra["fds_pre"]
				fdsLeft = max(fdsLeft, left)
				if len(r.Notes) > 0 {
					b.Logf("%s: descriptors open after db.Close that were not before sql.Open: %v", peer, r.Notes)
				}
				if peer == workload.Cleolease && left > 0 {
					b.Errorf("cleolease: %d descriptors open before sql.Open, %d after db.Close", r.Extra["fds_pre"], r.Extra["fds_end"])
				}
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(commits)/(float64(b.N)*s.Duration.Seconds()), "commits/s")
			b.ReportMetric(float64(hwm)/1024, "peak-RSS-MB")
			b.ReportMetric(float64(rss)/1024, "end-RSS-MB")
			b.ReportMetric(float64(fdsLeft), "fds-left")
		})
	}
}
