package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/workload"
)

// benchLine is one peer's figures for one load: medians over runs.
type benchLine struct {
	Driver        workload.Peer `json:"driver"`
	Runs          int           `json:"runs"`
	CommitsPerSec float64       `json:"commits_per_sec"`
	P50           time.Duration `json:"p50_ns"`
	P99           time.Duration `json:"p99_ns"`
	Max           time.Duration `json:"max_ns"`
	Errors        int64         `json:"errors"` // summed over runs
	Fairness      float64       `json:"fairness"`
	LostUpdates   int64         `json:"lost_updates"` // summed over runs
	ErrorSample   string        `json:"error_sample,omitempty"`
	// CPUPerOp is, for a Short load, the user and system CPU time of one
	// invocation (its process's, all runs pooled).
	CPUPerOp time.Duration `json:"cpu_per_op_ns,omitempty"`
}

// benchResult is one load's lines on one base, in the order of
// workload.Load.Peers, and cleolease's commits/s over each other peer's
// on that base.
type benchResult struct {
	Workload workload.Load             `json:"workload"`
	Base     string                    `json:"base"`
	Lines    []benchLine               `json:"lines"`
	Ratios   map[workload.Peer]float64 `json:"cleolease_over"`
}

func newBenchCmd() *cobra.Command {
	var (
		duration time.Duration
		runs     int
		only     []string
		scaling  bool
		sync     string
		baseArgs []string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure cleolease against raw go-sqlite3 and against a flock per transaction",
		Long: `bench runs the multi-process performance suite (the loads of the
repository's BenchmarkContention, go test -bench Contention): each load on
three peers (four where one process writes), alternating, each run in a
fresh file:

  txlock     raw go-sqlite3 through BeginTx with _txlock=immediate (BEGIN
             IMMEDIATE), WAL, synchronous=NORMAL, a 30 s busy timeout: raw
             at its best, paying database/sql's transaction as cleolease does
  flock      txlock inside an exclusive flock(2) on a side file around each
             transaction: the do-it-yourself fix
  pool1      txlock with db.SetMaxOpenConns(1), go-sqlite3's advice for one
             process (only in the loads of one process)
  cleolease  the cleolease driver, lane main/bench

Every transaction reads a counter and writes it back plus one, with a log
row, so lost updates show in the data.

Loads (--only selects some; --scaling adds the 16- and 32-process ones):
  1x1       uncontended: 1 process × 1 goroutine
  1x8       1 process × 8 goroutines, no work (a server's pool)
  4x2       4 processes × 2 goroutines, no work
  8x1-1ms   8 processes × 1 goroutine, 1 ms of work inside each transaction
  cli1      short-lived processes one after another, each a CLI command that
            starts, opens the file, runs one transaction, closes and exits
  cli8      8 loops of such processes at once (a CLI that 8 agents run)
  2lanes    2 processes running 300 ms transactions on one lane and one
            writer on another: the figures are that writer's, its latency
            its wait for the first lane (cleolease's write turn)
  16x1-1ms  16 processes, 1 ms of work (scaling)
  32x1-1ms  32 processes, 1 ms of work (scaling)

--base runs the peers on other SQLite drivers too (go-sqlite3, modernc,
ncruces): txlock and flock are then that driver with the same settings,
and cleolease its cleolease driver (cleolease-modernc, cleolease-ncruces).
A program links one base, so the workers of modernc and ncruces are their
modules' internal/benchworker programs, built first (CGO_ENABLED=0; this
needs the repository's checkout and the go command).

Columns: commits/s, latency p50 / p99 / max (begin to commit), errors,
fairness (min/max commits per process), lost updates, and cleolease's
commits/s over the peer's. With --runs N each figure is the median of N
runs.`,
		Example: `  cleolease bench
  cleolease bench --runs 5 --duration 3s
  cleolease bench --only 8x1-1ms --scaling
  cleolease bench --sync FULL`,
		Args: noArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if duration <= 0 || duration > 10*time.Minute {
				return usagef("--duration must be positive and at most 10m")
			}
			if runs < 1 || runs > 100 {
				return usagef("--runs must be between 1 and 100")
			}
			if sync = strings.ToUpper(sync); !slices.Contains([]string{"OFF", "NORMAL", "FULL", "EXTRA"}, sync) {
				return usagef("--sync %q: want OFF, NORMAL, FULL or EXTRA", sync)
			}
			for _, id := range only {
				if !slices.ContainsFunc(workload.Loads, func(l workload.Load) bool { return l.ID == id }) {
					return usagef("--only %q: want one of %s", id, workload.LoadIDs())
				}
			}
			var bases []workload.Base
			for _, a := range baseArgs {
				b, err := workload.ParseBase(a)
				if err != nil {
					return usagef("--base: %v", err)
				}
				if !slices.Contains(bases, b) {
					bases = append(bases, b)
				}
			}
			if len(bases) == 0 {
				bases = []workload.Base{workload.BaseGoSQLite3}
			}
			var loads []workload.Load
			for _, l := range workload.Loads {
				if slices.Contains(only, l.ID) || len(only) == 0 && (!l.Scaling || scaling) || scaling && l.Scaling {
					loads = append(loads, l)
				}
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), loads, bases, sync, duration, runs, asJSON)
		}),
	}
	f := cmd.Flags()
	f.DurationVarP(&duration, "duration", "d", 3*time.Second, "length of each measurement")
	f.IntVar(&runs, "runs", 1, "measurements per load and peer (figures are medians)")
	f.StringSliceVar(&only, "only", nil, "run only these loads ("+workload.LoadIDs()+")")
	f.BoolVar(&scaling, "scaling", false, "add the scaling loads (16x1-1ms, 32x1-1ms)")
	f.StringVar(&sync, "sync", "NORMAL", "SQLite's synchronous setting for every peer: OFF, NORMAL, FULL or EXTRA")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	f.StringSliceVar(&baseArgs, "base", nil, "SQLite drivers to run every peer on: go-sqlite3 (the default), modernc, ncruces")
	return cmd
}

func runBench(ctx context.Context, stdout, stderr io.Writer, loads []workload.Load, bases []workload.Base, sync string, d time.Duration, runs int, asJSON bool) error {
	dir, err := os.MkdirTemp("", "cleolease-bench-")
	if err != nil {
		return failf("%v", err)
	}
	defer os.RemoveAll(dir)
	exes := map[workload.Base]string{}
	for _, b := range bases {
		if b != workload.BaseGoSQLite3 {
			if exes[b], err = buildBaseWorker(ctx, b, dir); err != nil {
				return failf("%v", err)
			}
		}
	}
	ui := newProgress(stderr, asJSON && !isTerminal(stderr))
	type key struct {
		load string
		base workload.Base
	}
	per := map[key]map[workload.Peer][]benchSample{} // load, base → peer → runs
	n := 0
	for r := range runs {
		for _, l := range loads {
			for _, b := range bases {
				k := key{l.ID, b}
				if per[k] == nil {
					per[k] = map[workload.Peer][]benchSample{}
				}
				peers := l.Peers()
				for i := range peers { // each run starts with the next peer
					peer := peers[(i+r)%len(peers)]
					n++
					path := filepath.Join(dir, fmt.Sprintf("m%d.db", n))
					label := fmt.Sprintf("run %d/%d %s %s", r+1, runs, l.ID, peerLabel(b, peer))
					s, err := benchOnce(ctx, ui, l, b, exes[b], peer, sync, path, d, label)
					if err != nil {
						return failf("%s %s: %v", l.ID, peerLabel(b, peer), err)
					}
					per[k][peer] = append(per[k][peer], s)
					for _, suffix := range []string{"", "-wal", "-shm", "-flock"} {
						os.Remove(path + suffix)
					}
				}
			}
		}
	}
	var out []benchResult
	for _, l := range loads {
		for _, b := range bases {
			k := key{l.ID, b}
			res := benchResult{Workload: l, Base: b.String(), Ratios: map[workload.Peer]float64{}}
			for _, p := range l.Peers() {
				res.Lines = append(res.Lines, medianLine(p, per[k][p]))
			}
			cl := medianLine(workload.Cleolease, per[k][workload.Cleolease]).CommitsPerSec
			for _, line := range res.Lines {
				if line.Driver != workload.Cleolease && line.CommitsPerSec > 0 {
					res.Ratios[line.Driver] = cl / line.CommitsPerSec
				}
			}
			out = append(out, res)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printBench(stdout, out, d, sync, runs)
	return nil
}

// base is the result's base.
func (r benchResult) base() workload.Base {
	b, _ := workload.ParseBase(r.Base)
	return b
}

// peerLabel names a peer on a base: "txlock" on go-sqlite3, "modernc
// txlock" on modernc.
func peerLabel(b workload.Base, p workload.Peer) string {
	if b == workload.BaseGoSQLite3 {
		return string(p)
	}
	return b.String() + " " + string(p)
}

// buildBaseWorker builds base's worker program (its module's
// internal/benchworker, without cgo) into dir and returns its path. It
// needs the repository's checkout: the root module as the go command
// finds it from the working directory.
func buildBaseWorker(ctx context.Context, b workload.Base, dir string) (string, error) {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/cleocode/cleolease").Output()
	if err != nil || strings.TrimSpace(string(root)) == "" {
		return "", fmt.Errorf("--base %s builds the %s worker from the repository's checkout: run cleolease bench inside it (go list: %v)", b, b, err)
	}
	bin := filepath.Join(dir, b.String()+"-benchworker")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/benchworker")
	cmd.Dir = filepath.Join(strings.TrimSpace(string(root)), b.String())
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the %s worker: %v\n%s", b, err, out)
	}
	return bin, nil
}

// printBench writes the results as a table (latency in one column: p50 /
// p99 / max; see printTable for figures too large for it).
func printBench(w io.Writer, out []benchResult, d time.Duration, sync string, runs int) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("cleolease bench: %s per measurement, synchronous=%s, %d run(s) per load and peer (medians)", d, sync, runs)))
	header := []string{"load", "driver", "commits/s", "p50 / p99 / max ms", "errors", "fairness", "lost", "cleolease ÷"}
	var rows [][]string
	for _, r := range out {
		for _, l := range r.Lines {
			ratio := ""
			if x, ok := r.Ratios[l.Driver]; ok {
				ratio = fmt.Sprintf("%.2f×", x)
			}
			rows = append(rows, []string{r.Workload.ID, peerLabel(r.base(), l.Driver), fmtInt(int64(l.CommitsPerSec)),
				fmt.Sprintf("%s / %s / %s", fmtMS(l.P50), fmtMS(l.P99), fmtMS(l.Max)),
				fmtInt(l.Errors), fmt.Sprintf("%.2f", l.Fairness), fmtInt(l.LostUpdates), ratio})
		}
	}
	printTable(w, header, rows, 2)
	fmt.Fprintln(w, wrap("", "  ", "p50 / p99 / max: latency from begin to commit. lost: lost updates. cleolease ÷: cleolease's commits/s over the peer's (txlock: BEGIN IMMEDIATE through BeginTx; flock: txlock inside a flock)"))
	for _, r := range out {
		if !r.Workload.Short {
			continue
		}
		var cpu []string
		for _, l := range r.Lines {
			cpu = append(cpu, fmt.Sprintf("%s %s ms", peerLabel(r.base(), l.Driver), fmtMS(l.CPUPerOp)))
		}
		fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s: a commit is a process (start, open, one transaction, close, exit); latency is start to exit; CPU per invocation (user + system): %s",
			r.Workload.ID, strings.Join(cpu, ", "))))
	}
	for _, r := range out {
		for _, l := range r.Lines {
			if l.ErrorSample != "" {
				fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s %s, first error: %s", r.Workload.ID, peerLabel(r.base(), l.Driver), l.ErrorSample)))
			}
		}
	}
}

// benchSample is one measurement of one peer on one load.
type benchSample struct {
	load workload.Figures
	lost int64
	cpu  time.Duration // a Short load's: its processes' user and system time
}

func medianLine(peer workload.Peer, ss []benchSample) benchLine {
	l := benchLine{Driver: peer, Runs: len(ss)}
	var cps, fair []float64
	var p50, p99, mx []time.Duration
	for _, s := range ss {
		cps = append(cps, s.load.CommitsPerSec)
		fair = append(fair, s.load.Fairness)
		p50, p99, mx = append(p50, s.load.P50), append(p99, s.load.P99), append(mx, s.load.Max)
		l.Errors += s.load.Errs()
		l.LostUpdates += s.lost
		for _, m := range s.load.Samples {
			if l.ErrorSample == "" {
				l.ErrorSample = m
			}
		}
	}
	var cpu time.Duration
	var ops int64
	for _, s := range ss {
		cpu, ops = cpu+s.cpu, ops+s.load.Commits+s.load.Errs()
	}
	if cpu > 0 && ops > 0 {
		l.CPUPerOp = cpu / time.Duration(ops)
	}
	l.CommitsPerSec, l.Fairness = workload.Median(cps), workload.Median(fair)
	l.P50, l.P99, l.Max = workload.Median(p50), workload.Median(p99), workload.Median(mx)
	return l
}

func benchOnce(ctx context.Context, ui *progressUI, l workload.Load, base workload.Base, exe string, peer workload.Peer, sync, path string, d time.Duration, label string) (benchSample, error) {
	if err := workload.CreateCounter(ctx, path); err != nil {
		return benchSample{}, err
	}
	if l.Short {
		return benchShort(ctx, ui, l, base, exe, peer, sync, path, d, label)
	}
	specs := make([]workerSpec, l.Procs)
	for i := range specs {
		specs[i] = workerSpec{Spec: workload.Spec{Index: i, Peer: peer, Base: base, Sync: sync, Workload: "counter",
			Goroutines: l.Goroutines, Duration: d, Work: l.Work, Lane: "bench"}}
	}
	if l.Quiet {
		specs = append(specs, workerSpec{Spec: workload.Spec{Index: l.Procs, Peer: peer, Base: base, Sync: sync, Workload: "counter",
			Goroutines: 1, Duration: d, Lane: workload.QuietLane}})
	}
	fr := fleetRun{
		exe:   exe,
		specs: specs,
		migrated: func([]migrationOutcome) (string, error) {
			ui.start(label, d)
			return path, nil
		},
		ticker: ui.tick,
	}
	_, results, err := fr.run(ctx)
	if err != nil {
		ui.done("failed")
		return benchSample{}, err
	}
	s := benchSample{load: workload.Summarize(results, l.Goroutines, d)}
	acked := s.load.Commits
	if l.Quiet {
		// The figures are the quiet lane's writer's; the data holds all.
		quiet := slices.DeleteFunc(slices.Clone(results), func(r workload.Result) bool { return r.Index != l.Procs })
		s.load = workload.Summarize(quiet, 1, d)
	}
	if s.lost, err = workload.VerifyCounter(ctx, mattn.For(nil), path, acked); err != nil {
		ui.done("failed")
		return s, err
	}
	ui.done(fmt.Sprintf("%s commits/s, %s errors, fairness %.2f", fmtInt(int64(s.load.CommitsPerSec)),
		fmtInt(s.load.Errs()), s.load.Fairness))
	return s, nil
}

// benchShort measures a Short load: l.Procs loops, each starting one
// worker process after another (worker --once: open, one transaction,
// close, exit) for d; the figures are per invocation, start to exit, and
// the rate is over the wall time until the last process exits.
func benchShort(ctx context.Context, ui *progressUI, l workload.Load, base workload.Base, exe string, peer workload.Peer, sync, path string, d time.Duration, label string) (benchSample, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return benchSample{}, err
		}
	}
	start := func(loop int) *exec.Cmd {
		b, _ := json.Marshal(workerSpec{Spec: workload.Spec{Index: loop, Peer: peer, Base: base, Sync: sync, Workload: "counter",
			Goroutines: 1, Lane: "bench"}})
		return exec.CommandContext(ctx, exe, "worker", "--once", path, "--spec", string(b))
	}
	ui.start(label, d)
	began := time.Now()
	results, wall, err := workload.RunShort(ctx, l.Procs, d, start, func(commits, errs int64) {
		ui.tick(time.Since(began), commits, errs)
	})
	if err != nil {
		ui.done("failed")
		return benchSample{}, err
	}
	s := benchSample{load: workload.Summarize(results, 1, wall)}
	for _, r := range results {
		s.cpu += time.Duration(r.Extra["cpu_us"]) * time.Microsecond
	}
	if s.lost, err = workload.VerifyCounter(ctx, mattn.For(nil), path, s.load.Commits); err != nil {
		ui.done("failed")
		return s, err
	}
	ui.done(fmt.Sprintf("%.1f invocations/s, %s errors, fairness %.2f", s.load.CommitsPerSec,
		fmtInt(s.load.Errs()), s.load.Fairness))
	return s, nil
}
