package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/workload"
	"github.com/cleocode/cleolease/migrate"
)

type demoOptions struct {
	workers    int
	goroutines int
	duration   time.Duration
	work       time.Duration
	db         string
	migrations string
	table      string
	asJSON     bool
}

func newDemoCmd() *cobra.Command {
	o := demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run one multi-process workload on raw go-sqlite3 and on cleolease, side by side",
		Long: `demo needs no set-up. It creates a temporary database, then runs the same
workload twice with --workers processes, once on raw go-sqlite3 with the usual
DSN (` + workload.RawQuery + `, plain BEGIN) and once on cleolease
(sql.Open("cleolease", ...)):

 1. every process starts at the same moment and migrates the database to an
    embedded task-tracker schema (12 golang-migrate migrations: projects,
    tasks, comments, tags, an audit log, foreign keys, indexes, a table
    rebuild). Raw: each process runs golang-migrate itself, as a naive
    application does. cleolease: the driver migrates once, under the
    cold-open lease. Each migration records the process that applied it.
 2. for --duration every process runs read-modify-write transactions:
    new tasks (INSERT ... RETURNING), comments, batch status updates, each
    with its audit row.

It then checks the data (counters against the rows they count, audit rows
against the commits the workers saw succeed) and prints both runs side by
side: commits, lock errors, lost updates, fairness across processes
(min/max commits per process), latency, and how many processes applied each
migration.`,
		Example: `  cleolease demo
  cleolease demo --workers 4 --duration 3s
  cleolease demo --db ./demo.db                      # keep demo.db and demo.raw.db
  cleolease demo --migrations file://./migrations    # race your own migrations`,
		Args: noArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			switch {
			case o.workers < 1 || o.workers > 64:
				return usagef("--workers must be between 1 and 64")
			case o.goroutines < 1 || o.goroutines > 64:
				return usagef("--goroutines must be between 1 and 64")
			case o.duration <= 0 || o.duration > 10*time.Minute:
				return usagef("--duration must be positive and at most 10m")
			case o.work < 0 || o.work > time.Second:
				return usagef("--work must be between 0 and 1s")
			case !migrate.ValidTableName(o.table):
				return usagef("--table %q is not a plain SQL identifier", o.table)
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		}),
	}
	f := cmd.Flags()
	f.IntVarP(&o.workers, "workers", "w", 8, "worker processes")
	f.IntVar(&o.goroutines, "goroutines", 1, "writing goroutines per worker process")
	f.DurationVarP(&o.duration, "duration", "d", 5*time.Second, "how long each run's workload lasts")
	f.DurationVar(&o.work, "work", 0, "simulated work inside each transaction (e.g. 1ms)")
	f.StringVar(&o.db, "db", "", "keep the databases: cleolease's run uses this file, raw's the same name with .raw before the extension (both must not exist)")
	f.StringVar(&o.migrations, "migrations", "", "race your own golang-migrate migrations (file://DIR) instead of the embedded schema")
	f.StringVar(&o.table, "table", cleolease.DefaultMigrationsTable, "golang-migrate version table")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON instead of tables")
	return cmd
}

// migrationReport is how the start-up migrations of one run went.
type migrationReport struct {
	Set             string             `json:"set"`
	Versions        []versionRuns      `json:"versions"`
	MaxApplications int                `json:"max_applications"` // of any one migration
	Duplicated      int                `json:"duplicated"`       // migrations applied more than once
	Missing         int                `json:"missing"`          // migrations never applied
	Outcomes        map[string]int     `json:"outcomes"`         // per process
	Failed          int                `json:"failed"`           // processes whose migration step failed
	Slowest         time.Duration      `json:"slowest_ns"`       // until the last process was ready
	Final           migrationState     `json:"final"`
	SchemaUsable    bool               `json:"schema_usable"`
	Samples         []string           `json:"error_samples,omitempty"`
	Processes       []migrationOutcome `json:"processes"`
	// Collided reports that the race showed: a migration applied twice or
	// never, a process whose migration failed, or a dirty schema.
	Collided bool `json:"collided"`
	// Tries is how many times the phase ran, each on a fresh file: the
	// raw run repeats it, up to demoRaceTries, until the race shows.
	Tries int `json:"tries"`
}

// demoRaceTries bounds how often the raw run repeats its start-up
// migrations on a fresh file to show the race, which depends on timing.
const demoRaceTries = 5

// errRetryRace ends a raw run whose migrations did not collide, to try
// again on a fresh file.
var errRetryRace = errors.New("the migrations did not collide")

// collided reports whether the start-up migrations showed the race.
func (m migrationReport) collided() bool {
	return m.MaxApplications > 1 || m.Missing > 0 || m.Failed > 0 || m.Final.Dirty
}

type versionRuns struct {
	Version      uint64 `json:"version"`
	Name         string `json:"name"`
	Applications int    `json:"applications"`
}

type demoRun struct {
	Driver     workload.Peer         `json:"driver"`
	Label      string                `json:"label"`
	DB         string                `json:"db"`
	WorkloadDB string                `json:"workload_db"`
	Setup      string                `json:"setup"`
	Migrations migrationReport       `json:"migrations"`
	Load       workload.Figures      `json:"load"`
	Check      workload.TrackerCheck `json:"check"`
}

type demoReport struct {
	Workers       int           `json:"workers"`
	Goroutines    int           `json:"goroutines"`
	Duration      time.Duration `json:"duration_ns"`
	Work          time.Duration `json:"work_ns"`
	SQLiteVersion string        `json:"sqlite_version"`
	Runs          []demoRun     `json:"runs"` // raw, then cleolease
	Elapsed       time.Duration `json:"elapsed_ns"`
	Kept          bool          `json:"kept"`
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, o demoOptions) error {
	start := time.Now()
	var fsys fs.FS = demoMigrations()
	set := "embedded task tracker"
	if o.migrations != "" {
		var dir string
		var err error
		if fsys, dir, err = sourceFS(o.migrations); err != nil {
			return failf("%v", err)
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return failf("%v", err)
		}
		o.migrations, set = dir, "file://"+dir
	}
	versions, err := migrationVersions(fsys)
	if err != nil {
		return failf("%v", err)
	}
	paths := map[workload.Peer]string{}
	kept := o.db != ""
	if kept {
		ext := filepath.Ext(o.db)
		paths["cleolease"] = o.db
		paths["raw"] = strings.TrimSuffix(o.db, ext) + ".raw" + ext
		for _, p := range []string{paths["raw"], paths["cleolease"]} {
			if _, err := os.Stat(p); err == nil {
				return failf("%s already exists: the demo creates its databases; choose a new name or remove it", p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return failf("%s: %v", p, unwrapPathErr(err))
			}
		}
		if dir := filepath.Dir(o.db); dir != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return failf("%s: no such directory", dir)
			}
		}
	} else {
		dir, err := os.MkdirTemp("", "cleolease-demo-")
		if err != nil {
			return failf("%v", err)
		}
		defer os.RemoveAll(dir)
		paths["raw"] = filepath.Join(dir, "raw.db")
		paths["cleolease"] = filepath.Join(dir, "cleolease.db")
	}
	rep := demoReport{Workers: o.workers, Goroutines: o.goroutines, Duration: o.duration, Work: o.work, Kept: kept}
	ui := newProgress(stderr, o.asJSON && !isTerminal(stderr))
	ui.step("cleolease demo: %d workers × %d goroutine(s), %s per run, %d migrations (%s)",
		o.workers, o.goroutines, o.duration, len(versions), set)
	for _, driver := range []workload.Peer{workload.Raw, workload.Cleolease} {
		run, err := demoOnce(ctx, ui, o, driver, paths[driver], fsys, versions, set)
		if err != nil {
			return failf("%s run: %v", driver, err)
		}
		rep.Runs = append(rep.Runs, run)
	}
	rep.SQLiteVersion = sqliteVersion(ctx, paths["cleolease"])
	rep.Elapsed = time.Since(start)
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printDemo(stdout, rep)
	return nil
}

func sqliteVersion(ctx context.Context, path string) string {
	v := "?"
	readOnly(ctx, path, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&v)
	})
	return v
}

// createDemoDB creates path in WAL mode with the demo's instrumentation
// table; the application schema comes from the workers' migrations.
func createDemoDB(ctx context.Context, path string) error {
	return workload.ExecRaw(ctx, path, "_journal_mode=WAL&_busy_timeout=5000", ddlMigrationRuns)
}

func demoOnce(ctx context.Context, ui *progressUI, o demoOptions, driver workload.Peer, path string, fsys fs.FS, versions []uint64, set string) (demoRun, error) {
	run := demoRun{Driver: driver, DB: path}
	if driver == workload.Raw {
		run.Label = "raw go-sqlite3"
		run.Setup = `sql.Open("sqlite3", "file:…?` + workload.RawQuery + `"), db.BeginTx; golang-migrate Up in every process`
	} else {
		run.Label = "cleolease"
		run.Setup = `cleolease.OpenDB(&Config{SQLiteDSN: "file:…", MigrationsFS: …}), db.BeginTx; migrations at cold open`
	}
	for try := 1; ; try++ {
		if err := createDemoDB(ctx, path); err != nil {
			return run, err
		}
		err := demoFleet(ctx, ui, o, &run, path, fsys, versions, set, try)
		if !errors.Is(err, errRetryRace) {
			return run, err
		}
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return run, err
			}
		}
	}
}

// demoFleet is one try of a run: the workers migrate path at once, and,
// unless a raw run's migrations did not collide and tries remain
// (errRetryRace), run the workload.
func demoFleet(ctx context.Context, ui *progressUI, o demoOptions, run *demoRun, path string, fsys fs.FS, versions []uint64, set string, try int) error {
	specs := make([]workerSpec, o.workers)
	for i := range specs {
		specs[i] = workerSpec{Spec: workload.Spec{Index: i, Peer: run.Driver, Workload: "tracker",
			Goroutines: o.goroutines, Duration: o.duration, Work: o.work},
			MigrateDB: path, Migrations: o.migrations, Table: o.table}
	}
	migStart := time.Now()
	fr := fleetRun{
		specs: specs,
		migrating: func() {
			migStart = time.Now()
			ui.step("%s: %d processes start and migrate at once…", run.Label, o.workers)
		},
		migrated: func(outs []migrationOutcome) (string, error) {
			mr, err := analyzeMigrations(ctx, path, outs, fsys, versions, o.table)
			if err != nil {
				return "", err
			}
			mr.Set = set
			mr.Slowest = time.Since(migStart)
			mr.Tries, mr.Collided = try, mr.collided()
			run.Migrations = mr
			ui.step("%s: migrated in %s; max applications %d; %d/%d processes failed; version %s",
				run.Label, fmtAge(mr.Slowest), mr.MaxApplications, mr.Failed, o.workers, shortState(mr.Final))
			if run.Driver == workload.Raw && !mr.Collided && try < demoRaceTries {
				ui.step("%s: no collision this time (try %d of up to %d); again on a fresh file", run.Label, try, demoRaceTries)
				return "", errRetryRace
			}
			wdb := path
			if o.migrations != "" || !mr.SchemaUsable {
				// The workload needs the task-tracker tables: with your
				// own migrations, or when the race left the schema
				// unusable, it runs on a second file set up by one process.
				wdb = strings.TrimSuffix(path, filepath.Ext(path)) + ".workload" + filepath.Ext(path)
				if err := createWorkloadDB(ctx, wdb, o.table); err != nil {
					return "", fmt.Errorf("workload database: %w", err)
				}
				if !mr.SchemaUsable && o.migrations == "" {
					ui.step("%s: the migration race left the schema unusable; the workload runs on %s, migrated by one process", run.Label, wdb)
				}
			}
			run.WorkloadDB = wdb
			if err := workload.SeedTracker(ctx, wdb); err != nil {
				return "", fmt.Errorf("seed: %w", err)
			}
			ui.start(run.Label, o.duration)
			return wdb, nil
		},
		ticker: ui.tick,
	}
	_, results, err := fr.run(ctx)
	if errors.Is(err, errRetryRace) {
		return err
	}
	if err != nil {
		ui.done("failed")
		return err
	}
	run.Load = workload.Summarize(results, o.goroutines, o.duration)
	err = readOnly(ctx, run.WorkloadDB, func(db *sql.DB) (err error) {
		run.Check, err = workload.VerifyTracker(ctx, db, run.Load.Commits)
		return err
	})
	if err != nil {
		ui.done("failed")
		return fmt.Errorf("verify: %w", err)
	}
	ui.done(fmt.Sprintf("%s commits, %s lock errors, %d lost updates, fairness %.2f",
		fmtInt(run.Load.Commits), fmtInt(run.Load.LockErrors), run.Check.LostUpdates, run.Load.Fairness))
	return nil
}

// analyzeMigrations reads what the start-up migrations did to path.
func analyzeMigrations(ctx context.Context, path string, outs []migrationOutcome, fsys fs.FS, versions []uint64, table string) (migrationReport, error) {
	mr := migrationReport{Outcomes: map[string]int{}, Processes: outs}
	seen := map[string]bool{}
	for _, o := range outs {
		mr.Outcomes[o.Outcome]++
		if strings.HasPrefix(o.Outcome, "failed") || strings.HasPrefix(o.Outcome, "refused") {
			mr.Failed++
		}
		if o.Error != "" && !seen[o.Outcome] {
			seen[o.Outcome] = true
			mr.Samples = append(mr.Samples, o.Error)
		}
	}
	err := readOnly(ctx, path, func(db *sql.DB) error {
		counts := map[uint64]int{}
		rows, err := db.QueryContext(ctx, `SELECT version, count(*) FROM migration_runs GROUP BY version`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var v uint64
			var n int
			if err := rows.Scan(&v, &n); err != nil {
				rows.Close()
				return err
			}
			counts[v] = n
		}
		rows.Close()
		mr.Versions, mr.MaxApplications, mr.Missing, mr.Duplicated = nil, 0, 0, 0
		for _, v := range versions {
			n := counts[v]
			mr.Versions = append(mr.Versions, versionRuns{Version: v, Name: migrationFile(fsys, v), Applications: n})
			mr.MaxApplications = max(mr.MaxApplications, n)
			switch {
			case n == 0:
				mr.Missing++
			case n > 1:
				mr.Duplicated++
			}
		}
		if mr.Final, err = readMigrationState(ctx, db, table); err != nil {
			return err
		}
		mr.SchemaUsable = workload.TrackerSchemaUsable(ctx, db)
		return nil
	})
	return mr, err
}

// createWorkloadDB creates path with the embedded schema, migrated by this
// process alone.
func createWorkloadDB(ctx context.Context, path, table string) error {
	os.Remove(path)
	if err := createDemoDB(ctx, path); err != nil {
		return err
	}
	dsn, err := fileURI(path, "_busy_timeout=30000")
	if err != nil {
		return err
	}
	return migrate.Up(ctx, migrate.Options{DSN: dsn, Base: mattn.For(nil), FS: demoMigrations(), Table: table})
}

// printDemo writes the side-by-side report.
func printDemo(w io.Writer, rep demoReport) {
	raw, cl := rep.Runs[0], rep.Runs[1]
	fmt.Fprintf(w, "\ncleolease demo: %d processes × %d goroutine(s), %s of writes per run, SQLite %s\n",
		rep.Workers, rep.Goroutines, rep.Duration, rep.SQLiteVersion)
	indent := func(s string) string { return strings.ReplaceAll(s, "; ", ";\n             ") }
	fmt.Fprintf(w, "  raw:       %s\n  cleolease: %s\n", indent(raw.Setup), indent(cl.Setup))
	fmt.Fprintf(w, "  workload:  read-modify-write transactions: %s\n\n", strings.Replace(opMix(cl.Load.Ops), " (", "\n             (", 1))

	fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("Start-up migrations (%s), all %d processes at once — applications per migration:", cl.Migrations.Set, rep.Workers)))
	var mrows [][]string
	for i, v := range cl.Migrations.Versions {
		r := raw.Migrations.Versions[i]
		mrows = append(mrows, []string{v.Name, applied(r.Applications), applied(v.Applications)})
	}
	printTable(w, []string{"migration", raw.Label, cl.Label}, mrows, 1)
	fmt.Fprintln(w, wrapLines(raceNote(raw)))

	fmt.Fprintln(w)
	var rows [][]string
	row := func(label string, f func(r demoRun) string) { rows = append(rows, []string{label, f(raw), f(cl)}) }
	lease := func(f func(c *workload.LeaseCounters) int64) func(r demoRun) string {
		return func(r demoRun) string {
			if r.Load.Lease == nil {
				return "n/a"
			}
			return fmtInt(f(r.Load.Lease))
		}
	}
	row("commits", func(r demoRun) string {
		return fmt.Sprintf("%s (%s/s)", fmtInt(r.Load.Commits), fmtInt(int64(r.Load.CommitsPerSec)))
	})
	row("lock errors", func(r demoRun) string { return fmtInt(r.Load.LockErrors) })
	row("other errors", func(r demoRun) string { return fmtInt(r.Load.OtherErrors) })
	row("lost updates ¹", func(r demoRun) string { return fmtInt(r.Check.LostUpdates) })
	row("fairness (min/max commits)", func(r demoRun) string {
		return fmt.Sprintf("%.2f (%s / %s)", r.Load.Fairness, fmtInt(r.Load.MinCommits), fmtInt(r.Load.MaxCommits))
	})
	row("latency, committed try ²", func(r demoRun) string { return fmtLatency(r.Load) })
	row("latency, until it lands ³", func(r demoRun) string { return fmtLanded(r.Load) })
	row("lease grants", func(r demoRun) string {
		if r.Load.Lease == nil {
			return "n/a (no lease)"
		}
		return fmtInt(r.Load.Lease.Grants)
	})
	row("lease hand-offs", lease(func(c *workload.LeaseCounters) int64 { return c.Handoffs }))
	row("degraded grants", lease(func(c *workload.LeaseCounters) int64 { return c.Degraded }))
	row("fenced commits", lease(func(c *workload.LeaseCounters) int64 { return c.Fenced }))
	row("max applications/migration", func(r demoRun) string { return strconv.Itoa(r.Migrations.MaxApplications) })
	row("migrations applied 2+ times", func(r demoRun) string {
		return fmt.Sprintf("%d of %d", r.Migrations.Duplicated, len(r.Migrations.Versions))
	})
	row("processes failing migration", func(r demoRun) string {
		return fmt.Sprintf("%d of %d", r.Migrations.Failed, rep.Workers)
	})
	row("schema version afterwards", func(r demoRun) string { return shortState(r.Migrations.Final) })
	row("all processes migrated after", func(r demoRun) string { return fmtAge(r.Migrations.Slowest) })
	row("integrity / FK violations", func(r demoRun) string {
		return fmt.Sprintf("%s / %d", r.Check.Integrity, r.Check.FKViolations)
	})
	printTable(w, []string{"", raw.Label, cl.Label}, rows, 1)
	fmt.Fprintf(w, "¹ counters checked against the rows they count; audit rows against acknowledged commits\n")
	fmt.Fprintf(w, "  (raw %s for %s, cleolease %s for %s)\n", fmtInt(raw.Check.AuditRows), fmtInt(raw.Check.Acknowledged),
		fmtInt(cl.Check.AuditRows), fmtInt(cl.Check.Acknowledged))
	fmt.Fprintf(w, "² p50 / p99 / max, begin → commit of the attempt that committed; failed attempts left out\n")
	fmt.Fprintf(w, "³ p50 / p99 / max, a write's first attempt → its commit, failed attempts retried at once\n")
	fmt.Fprintf(w, "  (as an application would): what a caller waits for a write\n")
	fmt.Fprintf(w, "grants: writes (transactions) that took the lane's lease before BEGIN IMMEDIATE\n")
	fmt.Fprintf(w, "hand-offs: grants passed by the releasing process straight to the next waiter in line\n")
	fmt.Fprintf(w, "degraded: grants made without the lease after _lease_wait (mode local); 0 means none\n")
	fmt.Fprintf(w, "fenced: commits refused because the holder had lost its lease (they changed nothing)\n")
	for _, r := range rep.Runs {
		if kinds := failureKinds(r.Migrations.Outcomes); kinds != "" {
			fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s, processes failing migration: %s", r.Label, strings.Trim(kinds, " ()"))))
		}
	}

	for _, r := range rep.Runs {
		keys := make([]string, 0, len(r.Load.Samples))
		for k := range r.Load.Samples {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s, first %s error: %s", r.Label, k, r.Load.Samples[k])))
		}
		for _, s := range r.Migrations.Samples {
			fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s, a failed migration: %s", r.Label, s)))
		}
		if r.WorkloadDB != r.DB {
			fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s: the workload ran on %s (migrations on %s)", r.Label, r.WorkloadDB, r.DB)))
		}
	}
	if rep.Kept {
		fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("databases kept: %s (raw), %s (cleolease); try: cleolease status %s", raw.DB, cl.DB, cl.DB)))
	}
	fmt.Fprintf(w, "demo finished in %s\n", fmtAge(rep.Elapsed))
}

// raceNote says how the raw run's start-up migrations went: on which try
// the race showed, or that this run missed it.
func raceNote(raw demoRun) string {
	m := raw.Migrations
	switch {
	case !m.Collided:
		return fmt.Sprintf("%s: this run missed the race: no migration collided in %d tries on fresh files\n"+
			"  (it depends on timing; cleolease serialises them every time)", raw.Label, m.Tries)
	}
	var what []string
	if m.Duplicated > 0 {
		what = append(what, fmt.Sprintf("%d %s applied twice or more", m.Duplicated, plural(m.Duplicated, "migration")))
	}
	if m.Missing > 0 {
		what = append(what, fmt.Sprintf("%d never applied", m.Missing))
	}
	if m.Failed > 0 {
		what = append(what, fmt.Sprintf("%d of %d processes failed to migrate", m.Failed, len(m.Processes)))
	}
	if m.Final.Dirty {
		what = append(what, "the schema left dirty")
	}
	if m.Tries <= 1 {
		return fmt.Sprintf("%s: the race showed on the first try:\n  %s", raw.Label, strings.Join(what, ", "))
	}
	return fmt.Sprintf("%s: the race showed on try %d of up to %d, each on a fresh file:\n  %s",
		raw.Label, m.Tries, demoRaceTries, strings.Join(what, ", "))
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func applied(n int) string {
	switch n {
	case 0:
		return "never"
	case 1:
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func shortState(m migrationState) string {
	switch {
	case !m.Present:
		return "no version table"
	case m.Version == nil:
		return "none"
	case m.Dirty:
		return fmt.Sprintf("%d, DIRTY", *m.Version)
	}
	return fmt.Sprintf("%d, clean", *m.Version)
}

func failureKinds(outcomes map[string]int) string {
	var parts []string
	for k, n := range outcomes {
		if strings.HasPrefix(k, "failed") || strings.HasPrefix(k, "refused") {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, "; ") + ")"
}

func opMix(ops map[string]int64) string {
	var total int64
	for _, n := range ops {
		total += n
	}
	if total == 0 {
		return "add task (INSERT … RETURNING), comment, batch update"
	}
	var parts []string
	for _, n := range workload.TrackerOps {
		parts = append(parts, fmt.Sprintf("%s %d%%", n, (ops[n]*100+total/2)/total))
	}
	return strings.Join(parts, ", ") + " (add task uses INSERT … RETURNING)"
}
