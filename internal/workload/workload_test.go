package workload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	_ "github.com/cleocode/cleolease" // registers "cleolease" (and go-sqlite3's "sqlite3"): the peers' drivers
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/internal/workload"
)

// TestMain plays a worker when WORKLOAD_TEST_SPEC is set (TestFleet's
// children): it opens WORKLOAD_TEST_DB and runs the spec.
func TestMain(m *testing.M) {
	if spec := os.Getenv("WORKLOAD_TEST_SPEC"); spec != "" {
		os.Exit(worker(spec, os.Getenv("WORKLOAD_TEST_DB")))
	}
	os.Exit(m.Run())
}

func worker(spec, path string) int {
	var s workload.Spec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	db, err := workload.Open(ctx, s.Peer, path, s.Sync)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	w := workload.NewWorker(os.Stdin, os.Stdout)
	res, err := w.Measure(ctx, db, s, path)
	if err == nil {
		err = w.Report(res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// peers are the peers this platform can run.
func peers() []workload.Peer {
	var ps []workload.Peer
	for _, p := range []workload.Peer{workload.Raw, workload.TxLock, workload.Flock, workload.Cleolease} {
		if p.Supported() {
			ps = append(ps, p)
		}
	}
	return ps
}

// TestRunEveryPeer runs the counter workload briefly in this process on
// every peer: commits, no lost update, fairness and percentiles sane.
func TestRunEveryPeer(t *testing.T) {
	ctx := context.Background()
	for _, p := range peers() {
		t.Run(string(p), func(t *testing.T) {
			path := filepath.Join(testdir.New(t), "c.db")
			if err := workload.CreateCounter(ctx, path); err != nil {
				t.Fatal(err)
			}
			db, err := workload.Open(ctx, p, path, "")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s := workload.Spec{Peer: p, Workload: "counter", Goroutines: 2, Duration: 100 * time.Millisecond, Lane: "test"}
			w, err := workload.New(ctx, s.Workload, db)
			if err != nil {
				t.Fatal(err)
			}
			var ticks int
			res, err := workload.Run(ctx, db, w, s, path, func(int64, int64) { ticks++ })
			if err != nil {
				t.Fatal(err)
			}
			if ticks == 0 || res.Commits == 0 || int64(len(res.Latencies)) != res.Commits || res.Ops["rmw"] != res.Commits {
				t.Fatalf("%d progress calls, result %d commits, %d latencies, ops %v", ticks, res.Commits, len(res.Latencies), res.Ops)
			}
			if (res.Lease != nil) != (p == workload.Cleolease) {
				t.Errorf("lease counters %v for %s", res.Lease, p)
			}
			lost, err := workload.VerifyCounter(ctx, mattn.For(nil), path, res.Commits)
			if err != nil || lost != 0 {
				t.Errorf("VerifyCounter: %d lost, %v (errors %v)", lost, err, res.Samples)
			}
		})
	}
}

// TestFleet runs two worker processes through the protocol on every
// benchmark peer this platform has.
func TestFleet(t *testing.T) {
	ctx := context.Background()
	for _, p := range peers() {
		if p == workload.Raw {
			continue
		}
		t.Run(string(p), func(t *testing.T) {
			path := filepath.Join(testdir.New(t), "c.db")
			if err := workload.CreateCounter(ctx, path); err != nil {
				t.Fatal(err)
			}
			s := workload.Spec{Peer: p, Workload: "counter", Goroutines: 1, Duration: 100 * time.Millisecond, Work: 100 * time.Microsecond}
			cmds := make([]*exec.Cmd, 2)
			for i := range cmds {
				s.Index = i
				b, _ := json.Marshal(s)
				cmds[i] = proctest.Command("WORKLOAD_TEST_SPEC="+string(b), "WORKLOAD_TEST_DB="+path, proctest.GoraceNoExitSleep())
			}
			f, err := workload.StartFleet(cmds)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Kill)
			results, err := f.Measure(s.Duration, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Wait(); err != nil {
				t.Fatal(err)
			}
			fig := workload.Summarize(results, 1, s.Duration)
			if fig.Workers != 2 || fig.MinCommits == 0 || fig.Errs() != 0 || fig.Max < fig.P99 || fig.P99 < fig.P50 {
				t.Fatalf("figures: %+v", fig)
			}
			for i, r := range results {
				if r.Index != i || r.PID == os.Getpid() {
					t.Errorf("result %d: index %d pid %d", i, r.Index, r.PID)
				}
			}
			if lost, err := workload.VerifyCounter(ctx, mattn.For(nil), path, fig.Commits); err != nil || lost != 0 {
				t.Errorf("VerifyCounter: %d lost, %v", lost, err)
			}
		})
	}
}

// TestFleetWorkerFails: a worker that exits early is reported by name
// with the last line of its stderr.
func TestFleetWorkerFails(t *testing.T) {
	cmd := proctest.Command("WORKLOAD_TEST_SPEC={", "WORKLOAD_TEST_DB=/nonexistent")
	cmd.Stderr = nil
	f, err := workload.StartFleet([]*exec.Cmd{cmd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Kill)
	_, err = f.Measure(time.Second, nil)
	if err == nil || !regexpMatch(`worker 0 \(pid \d+\) ended before OPENED: unexpected end of JSON input`, err.Error()) {
		t.Fatalf("error %v", err)
	}
}

// TestSummarize checks fairness, percentiles and error classes on made-up
// results.
func TestSummarize(t *testing.T) {
	rs := []workload.Result{
		{Commits: 4, Latencies: []int64{1000, 2000, 3000, 4000}, Errors: map[string]int64{"locked": 2}, Extra: map[string]int64{"hwm_kb": 10}},
		{Commits: 2, Latencies: []int64{5000, 6000}, Errors: map[string]int64{"other": 1}, Extra: map[string]int64{"hwm_kb": 30}},
	}
	f := workload.Summarize(rs, 1, 2*time.Second)
	if f.Commits != 6 || f.CommitsPerSec != 3 || f.Fairness != 0.5 || f.LockErrors != 2 || f.OtherErrors != 1 || f.Errs() != 3 ||
		f.P50 != 3*time.Millisecond || f.Max != 6*time.Millisecond || f.PeakRSSkB != 30 {
		t.Fatalf("%+v", f)
	}
	if m := workload.Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median %v", m)
	}
}

// TestDSN: each peer's DSN, the path escaped.
func TestDSN(t *testing.T) {
	// An absolute path of this OS and its escaped form in the URI: on
	// Windows SQLite reads "file:C:%5Cdir%5Cx.db" as C:\dir\x.db (a URI
	// without an authority starts its path right after "file:",
	// https://www.sqlite.org/uri.html).
	path, esc, x, xesc := "/tmp/a b?.db", "/tmp/a%20b%3F.db", "/tmp/x.db", "/tmp/x.db"
	if runtime.GOOS == "windows" {
		path, esc, x, xesc = `C:\tmp\a b?.db`, "C:%5Ctmp%5Ca%20b%3F.db", `C:\tmp\x.db`, "C:%5Ctmp%5Cx.db"
	}
	for p, want := range map[workload.Peer]string{
		workload.Raw:       "file:" + esc + "?" + workload.RawQuery,
		workload.TxLock:    "file:" + esc + "?" + fmt.Sprintf(workload.TxLockQuery, "FULL"),
		workload.Flock:     "file:" + esc + "?" + fmt.Sprintf(workload.TxLockQuery, "FULL"),
		workload.Cleolease: "file:" + esc + "?_synchronous=FULL",
	} {
		if got, err := p.DSN(path, "FULL"); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
	if got, _ := workload.Cleolease.DSN(x, ""); got != "file:"+xesc {
		t.Errorf("cleolease NORMAL: %q", got)
	}
	if _, err := workload.ParsePeer("sqlite"); err == nil {
		t.Error("ParsePeer accepted an unknown peer")
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// TestDSNOnBases: on the cgo-free bases the peers open the same settings in
// the base's dialect (_pragma=…), with its drivers; raw stays go-sqlite3's.
func TestDSNOnBases(t *testing.T) {
	x := "/tmp/x.db"
	if runtime.GOOS == "windows" {
		x = `C:\tmp\x.db`
	}
	for _, b := range []workload.Base{workload.BaseModernc, workload.BaseNcruces} {
		got, err := workload.TxLock.DSNOn(b, x, "FULL")
		if err != nil || !strings.Contains(got, "_pragma=synchronous(FULL)") || !strings.Contains(got, "_pragma=busy_timeout(30000)") ||
			!strings.Contains(got, "_pragma=journal_mode(WAL)") || !strings.Contains(got, "_txlock=immediate") {
			t.Errorf("%s txlock: %q, %v", b, got, err)
		}
		if got, err := workload.Cleolease.DSNOn(b, x, "OFF"); err != nil || !strings.HasSuffix(got, "?_pragma=synchronous(OFF)") {
			t.Errorf("%s cleolease OFF: %q, %v", b, got, err)
		}
		if _, err := workload.Raw.DSNOn(b, x, ""); err == nil {
			t.Errorf("%s: raw accepted", b)
		}
	}
	for b, want := range map[workload.Base][2]string{
		workload.BaseGoSQLite3: {"sqlite3", "cleolease"},
		workload.BaseModernc:   {"sqlite", "cleolease-modernc"},
		workload.BaseNcruces:   {"sqlite3", "cleolease-ncruces"},
	} {
		if got := [2]string{workload.TxLock.DriverNameOn(b), workload.Cleolease.DriverNameOn(b)}; got != want {
			t.Errorf("%s: drivers %v, want %v", b, got, want)
		}
	}
	for s, want := range map[string]workload.Base{"go-sqlite3": workload.BaseGoSQLite3, "modernc": workload.BaseModernc, "ncruces": workload.BaseNcruces} {
		if got, err := workload.ParseBase(s); err != nil || got != want || got.String() != s {
			t.Errorf("ParseBase(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := workload.ParseBase("sqlite"); err == nil {
		t.Error("ParseBase accepted an unknown base")
	}
}
