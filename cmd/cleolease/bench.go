package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
)

// rawBenchQuery is raw go-sqlite3 at its best for writers: BEGIN
// IMMEDIATE and the pragmas cleolease applies by default.
const rawBenchQuery = "_busy_timeout=30000&_journal_mode=WAL&_synchronous=NORMAL&_fk=1&_txlock=immediate"

type benchWorkload struct {
	ID         string        `json:"id"`
	Name       string        `json:"name"`
	Procs      int           `json:"procs"`
	Goroutines int           `json:"goroutines"`
	Work       time.Duration `json:"work_ns"`
}

var benchWorkloads = []benchWorkload{
	{"1x1", "uncontended: 1 process × 1 goroutine", 1, 1, 0},
	{"4x2", "4 processes × 2 goroutines, no work", 4, 2, 0},
	{"8x1", "8 processes × 1 goroutine, 1 ms work in each tx", 8, 1, time.Millisecond},
}

// benchLine is one driver's figures for one workload: medians over runs.
type benchLine struct {
	Driver        string        `json:"driver"`
	Runs          int           `json:"runs"`
	CommitsPerSec float64       `json:"commits_per_sec"`
	P50           time.Duration `json:"p50_ns"`
	P99           time.Duration `json:"p99_ns"`
	Max           time.Duration `json:"max_ns"`
	Errors        int64         `json:"errors"` // summed over runs
	Fairness      float64       `json:"fairness"`
	LostUpdates   int64         `json:"lost_updates"` // summed over runs
	ErrorSample   string        `json:"error_sample,omitempty"`
}

type benchResult struct {
	Workload  benchWorkload `json:"workload"`
	Raw       benchLine     `json:"raw"`
	Cleolease benchLine     `json:"cleolease"`
	Ratio     float64       `json:"ratio"` // cleolease / raw commits per second
}

func newBenchCmd() *cobra.Command {
	var (
		duration time.Duration
		runs     int
		only     []string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure cleolease against raw go-sqlite3 (BEGIN IMMEDIATE) in the same run",
		Long: `bench runs the multi-process performance suite: each workload on raw
go-sqlite3 (BEGIN IMMEDIATE via _txlock=immediate, WAL, synchronous=NORMAL:
raw at its best) and on cleolease, alternating, in fresh files, with the
demo's worker processes. Every transaction reads a counter and writes it
back plus one, with a log row, so lost updates show in the data.

Workloads (--only selects some):
  1x1  uncontended: 1 process × 1 goroutine
  4x2  4 processes × 2 goroutines, no work
  8x1  8 processes × 1 goroutine, 1 ms of work inside each transaction

Columns: commits/s, latency p50/p99/max (begin to commit), errors, fairness
(min/max commits per process), lost updates, and the ratio of cleolease's
commits/s to raw's. With --runs N each figure is the median of N runs.`,
		Example: `  cleolease bench
  cleolease bench --runs 5 --duration 3s
  cleolease bench --only 8x1`,
		Args: noArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if duration <= 0 || duration > 10*time.Minute {
				return usagef("--duration must be positive and at most 10m")
			}
			if runs < 1 || runs > 100 {
				return usagef("--runs must be between 1 and 100")
			}
			var wls []benchWorkload
			for _, w := range benchWorkloads {
				if len(only) == 0 || slices.Contains(only, w.ID) {
					wls = append(wls, w)
				}
			}
			for _, id := range only {
				if !slices.ContainsFunc(benchWorkloads, func(w benchWorkload) bool { return w.ID == id }) {
					return usagef("--only %q: want 1x1, 4x2 or 8x1", id)
				}
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), wls, duration, runs, asJSON)
		}),
	}
	f := cmd.Flags()
	f.DurationVarP(&duration, "duration", "d", 3*time.Second, "length of each measurement")
	f.IntVar(&runs, "runs", 1, "measurements per workload and driver (figures are medians)")
	f.StringSliceVar(&only, "only", nil, "run only these workloads (1x1, 4x2, 8x1)")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func runBench(ctx context.Context, stdout, stderr io.Writer, wls []benchWorkload, d time.Duration, runs int, asJSON bool) error {
	dir, err := os.MkdirTemp("", "cleolease-bench-")
	if err != nil {
		return failf("%v", err)
	}
	defer os.RemoveAll(dir)
	ui := newProgress(stderr, asJSON && !isTerminal(stderr))
	per := map[string]map[string][]benchSample{} // workload → driver → runs
	n := 0
	for r := 0; r < runs; r++ {
		for _, wl := range wls {
			order := []string{"raw", "cleolease"}
			if r%2 == 1 {
				order = []string{"cleolease", "raw"}
			}
			for _, driver := range order {
				n++
				path := filepath.Join(dir, fmt.Sprintf("m%d.db", n))
				s, err := benchOnce(ctx, ui, wl, driver, path, d, fmt.Sprintf("run %d/%d %s %s", r+1, runs, wl.ID, driver))
				if err != nil {
					return failf("%s %s: %v", wl.ID, driver, err)
				}
				if per[wl.ID] == nil {
					per[wl.ID] = map[string][]benchSample{}
				}
				per[wl.ID][driver] = append(per[wl.ID][driver], s)
				os.Remove(path)
			}
		}
	}
	var out []benchResult
	for _, wl := range wls {
		res := benchResult{Workload: wl, Raw: medianLine("raw", per[wl.ID]["raw"]), Cleolease: medianLine("cleolease", per[wl.ID]["cleolease"])}
		if res.Raw.CommitsPerSec > 0 {
			res.Ratio = res.Cleolease.CommitsPerSec / res.Raw.CommitsPerSec
		}
		out = append(out, res)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(stdout, "\ncleolease bench: %s per measurement, %d run(s) per workload and driver (medians), raw = go-sqlite3 BEGIN IMMEDIATE\n", d, runs)
	t := newTable(stdout, "workload", "driver", "commits/s", "p50 ms", "p99 ms", "max ms", "errors", "fairness", "lost updates", "cleolease/raw")
	for _, r := range out {
		for _, l := range []benchLine{r.Raw, r.Cleolease} {
			ratio := ""
			if l.Driver == "cleolease" {
				ratio = fmt.Sprintf("%.2f×", r.Ratio)
			}
			t.Append([]string{r.Workload.Name, l.Driver, fmtInt(int64(l.CommitsPerSec)), fmtMS(l.P50), fmtMS(l.P99), fmtMS(l.Max),
				fmtInt(l.Errors), fmt.Sprintf("%.2f", l.Fairness), fmtInt(l.LostUpdates), ratio})
		}
	}
	t.Render()
	for _, r := range out {
		for _, l := range []benchLine{r.Raw, r.Cleolease} {
			if l.ErrorSample != "" {
				fmt.Fprintf(stdout, "%s %s, first error: %s\n", r.Workload.ID, l.Driver, l.ErrorSample)
			}
		}
	}
	return nil
}

type benchSample struct {
	load loadFigures
	lost int64
}

func medianLine(driver string, ss []benchSample) benchLine {
	l := benchLine{Driver: driver, Runs: len(ss)}
	var cps, fair []float64
	var p50, p99, mx []time.Duration
	for _, s := range ss {
		cps = append(cps, s.load.CommitsPerSec)
		fair = append(fair, s.load.Fairness)
		p50, p99, mx = append(p50, s.load.P50), append(p99, s.load.P99), append(mx, s.load.Max)
		l.Errors += s.load.LockErrors + s.load.OtherErrors
		l.LostUpdates += s.lost
		for _, m := range s.load.Samples {
			if l.ErrorSample == "" {
				l.ErrorSample = m
			}
		}
	}
	l.CommitsPerSec, l.Fairness = median(cps), median(fair)
	l.P50, l.P99, l.Max = median(p50), median(p99), median(mx)
	return l
}

func benchOnce(ctx context.Context, ui *progressUI, wl benchWorkload, driver, path string, d time.Duration, label string) (benchSample, error) {
	if err := createCounterDB(ctx, path); err != nil {
		return benchSample{}, err
	}
	specs := make([]workerSpec, wl.Procs)
	for i := range specs {
		specs[i] = workerSpec{Index: i, Driver: driver, RawQuery: rawBenchQuery, Workload: "counter",
			Goroutines: wl.Goroutines, Duration: d, Work: wl.Work}
	}
	fr := fleetRun{
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
	s := benchSample{load: summarize(results, wl.Goroutines, d)}
	if s.lost, err = verifyCounter(ctx, path, s.load.Commits); err != nil {
		ui.done("failed")
		return s, err
	}
	ui.done(fmt.Sprintf("%s commits/s, %s errors, fairness %.2f", fmtInt(int64(s.load.CommitsPerSec)),
		fmtInt(s.load.LockErrors+s.load.OtherErrors), s.load.Fairness))
	return s, nil
}

func createCounterDB(ctx context.Context, path string) error {
	dsn, err := fileURI(path, "_journal_mode=WAL&_busy_timeout=5000")
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
		INSERT INTO counter VALUES (1, 0);
		CREATE TABLE log (id INTEGER PRIMARY KEY, proc INTEGER, g INTEGER, seen INTEGER)`)
	return err
}

// verifyCounter returns the lost updates: |counter − log rows| plus
// |log rows − acknowledged commits|.
func verifyCounter(ctx context.Context, path string, acked int64) (int64, error) {
	var n, rows int64
	err := readOnly(ctx, path, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT (SELECT n FROM counter WHERE id = 1), (SELECT count(*) FROM log)`).Scan(&n, &rows)
	})
	if err != nil {
		return 0, err
	}
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	return abs(n-rows) + abs(rows-acked), nil
}
