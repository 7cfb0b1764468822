package main

// The worker: a hidden subcommand the demo and bench re-execute
// (os.Executable) once per worker process, and runFleet, the parent side.
// Before internal/workload's protocol (OPENED, GO, progress, RESULT) they
// run the demo's start-up phase:
//
//	worker → READY
//	parent → MIGRATE          worker migrates spec.MigrateDB (if set)
//	worker → MIGRATED {json}  its migrationOutcome
//	parent → OPEN PATH        the database the workload runs on
//
// The barriers make every worker migrate at the same moment (the race a
// naive application has at start-up) and start the workload together.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	msqlite "github.com/golang-migrate/migrate/v4/database/sqlite3"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/spf13/cobra"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/workload"
	cleomigrate "github.com/cleocode/cleolease/migrate"
)

// workerSpec is what the parent asks of one worker process: the workload
// and, for the demo, the start-up migration.
type workerSpec struct {
	workload.Spec
	MigrateDB  string `json:"migrate_db,omitempty"`
	Migrations string `json:"migrations,omitempty"` // "" embedded demo set, else a directory
	Table      string `json:"table,omitempty"`
}

// migrationOutcome is how one worker's start-up migration went.
type migrationOutcome struct {
	PID     int           `json:"pid"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Outcome string        `json:"outcome"` // "ok", "no change", or a failure class
	Error   string        `json:"error,omitempty"`
}

func newWorkerCmd() *cobra.Command {
	var spec, once string
	cmd := &cobra.Command{
		Use:    "worker --spec JSON",
		Short:  "internal: one worker process of demo and bench",
		Hidden: true,
		Args:   noArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			var s workerSpec
			if err := json.Unmarshal([]byte(spec), &s); err != nil {
				return usagef("--spec: %v", err)
			}
			if once != "" {
				return workload.Once(cmd.Context(), s.Spec, once)
			}
			return runWorker(cmd.Context(), s, os.Stdin, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().StringVar(&spec, "spec", "", "worker spec (JSON)")
	cmd.Flags().StringVar(&once, "once", "", "run one transaction on this database and exit (a short-lived load)")
	return cmd
}

func runWorker(ctx context.Context, s workerSpec, stdin io.Reader, stdout io.Writer) error {
	w := workload.NewWorker(stdin, stdout)
	var step func() (migrationOutcome, *sql.DB)
	if s.MigrateDB != "" {
		step = prepareMigration(ctx, s)
	}
	w.Say("READY")
	if _, err := w.Expect("MIGRATE"); err != nil {
		return err
	}
	var out migrationOutcome
	var mdb *sql.DB // the cleolease handle that migrated, reused for the workload
	if step != nil {
		out, mdb = step()
	}
	out.PID = os.Getpid()
	b, _ := json.Marshal(out)
	w.Say("MIGRATED %s", b)

	path, err := w.Expect("OPEN")
	if err != nil {
		return err
	}
	db := mdb
	if mdb == nil || path != s.MigrateDB {
		if mdb != nil {
			mdb.Close()
		}
		if db, err = workload.Open(ctx, s.Peer, path, s.Sync); err != nil {
			return err
		}
	}
	defer db.Close()
	res, err := w.Measure(ctx, db, s.Spec, path)
	if err != nil {
		return err
	}
	return w.Report(res)
}

// fleetRun is one pass of the worker protocol from the parent.
type fleetRun struct {
	// exe is the worker program; "" is this one (os.Executable).
	exe   string
	specs []workerSpec
	// migrating is called once when the migration barrier opens.
	migrating func()
	// migrated runs after every worker reported MIGRATED and returns the
	// database the workload runs on.
	migrated func(outs []migrationOutcome) (workloadDB string, err error)
	// ticker is called about every 100 ms while the workload runs.
	ticker func(elapsed time.Duration, commits, errs int64)
}

func (fr fleetRun) run(ctx context.Context) ([]migrationOutcome, []workload.Result, error) {
	exe := fr.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, nil, err
		}
	}
	cmds := make([]*exec.Cmd, len(fr.specs))
	for i, s := range fr.specs {
		b, _ := json.Marshal(s)
		cmds[i] = exec.Command(exe, "worker", "--spec", string(b))
		cmds[i].WaitDelay = 5 * time.Second
	}
	f, err := workload.StartFleet(cmds)
	if err != nil {
		return nil, nil, err
	}
	defer context.AfterFunc(ctx, f.Kill)() // ctx ends the workers (Ctrl-C)
	ok := false
	defer func() {
		if !ok {
			f.Kill()
		}
	}()
	if _, err := f.Gather("READY"); err != nil {
		return nil, nil, err
	}
	if fr.migrating != nil {
		fr.migrating()
	}
	if err := f.Broadcast("MIGRATE"); err != nil {
		return nil, nil, err
	}
	lines, err := f.Gather("MIGRATED")
	if err != nil {
		return nil, nil, err
	}
	outs := make([]migrationOutcome, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &outs[i]); err != nil {
			return nil, nil, failf("worker %d: bad MIGRATED: %v", i, err)
		}
	}
	wdb, err := fr.migrated(outs)
	if err != nil {
		return outs, nil, err
	}
	if err := f.Broadcast("OPEN " + wdb); err != nil {
		return outs, nil, err
	}
	results, err := f.Measure(fr.specs[0].Duration, fr.ticker)
	if err != nil {
		return outs, nil, err
	}
	ok = true
	return outs, results, f.Wait()
}

func workerMigrations(s workerSpec) (fs.FS, error) {
	var fsys fs.FS = demoMigrations()
	if s.Migrations != "" {
		fsys = os.DirFS(s.Migrations)
	}
	return countingFS(fsys, os.Getpid())
}

// prepareMigration does, before the start barrier, what each peer's user
// does before migrating, and returns the migration step itself, run when
// the barrier opens: raw, every process runs golang-migrate itself (the
// naive application: its own *sql.DB, WithInstance, then Up); cleolease,
// the first connection runs the migrations at cold open
// (Config.MigrationsFS) under the cold-open lease. The step returns the
// cleolease handle, reused for the workload.
func prepareMigration(ctx context.Context, s workerSpec) func() (migrationOutcome, *sql.DB) {
	failed := func(err error) func() (migrationOutcome, *sql.DB) {
		return func() (migrationOutcome, *sql.DB) {
			o, e := classifyMigration(err)
			return migrationOutcome{Outcome: o, Error: e}, nil
		}
	}
	fsys, err := workerMigrations(s)
	if err != nil {
		return failed(err)
	}
	dsn, err := s.Peer.DSN(s.MigrateDB, s.Sync)
	if err != nil {
		return failed(err)
	}
	if s.Peer != workload.Cleolease {
		m, err := naiveMigrator(dsn, fsys, s.Table)
		if err != nil {
			return failed(err)
		}
		return func() (migrationOutcome, *sql.DB) {
			start := time.Now()
			err := m.Up()
			m.Close()
			out := migrationOutcome{Elapsed: time.Since(start)}
			out.Outcome, out.Error = classifyMigration(err)
			return out, nil
		}
	}
	cfg, err := cleolease.ParseDSN(dsn)
	if err != nil {
		return failed(err)
	}
	cfg.MigrationsFS = fsys
	cfg.MigrationsTable = s.Table
	db, err := cleolease.OpenDB(cfg) // no I/O yet
	if err != nil {
		return failed(err)
	}
	return func() (migrationOutcome, *sql.DB) {
		start := time.Now()
		err := db.PingContext(ctx) // the first connection: cold open, migrations
		out := migrationOutcome{}
		out.Elapsed = time.Since(start)
		out.Outcome, out.Error = classifyMigration(err)
		if err != nil {
			db.Close()
			return out, nil
		}
		return out, db
	}
}

// naiveMigrator is what an application sets up at start-up with go-sqlite3
// and golang-migrate: its own *sql.DB, WithInstance, an iofs source.
func naiveMigrator(dsn string, fsys fs.FS, table string) (*migrate.Migrate, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	drv, err := msqlite.WithInstance(db, &msqlite.Config{MigrationsTable: table})
	if err != nil {
		db.Close()
		return nil, err
	}
	src, err := iofs.New(fsys, ".")
	if err != nil {
		drv.Close()
		return nil, err
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite3", drv)
	if err != nil {
		drv.Close()
		return nil, err
	}
	return m, nil
}

// classifyMigration names a start-up migration's result.
func classifyMigration(err error) (string, string) {
	var dirty migrate.ErrDirty
	switch {
	case err == nil:
		return "ok", ""
	case errors.Is(err, migrate.ErrNoChange):
		return "no change", ""
	case errors.As(err, &dirty), errors.Is(err, cleomigrate.ErrDirty) && !errors.Is(err, cleomigrate.ErrFailed):
		return "refused: dirty", workload.ShortErr(err)
	case workload.IsLockErr(err):
		return "failed: database is locked", workload.ShortErr(err)
	}
	msg := err.Error()
	for _, s := range []string{"already exists", "duplicate column", "UNIQUE constraint failed", "no such table", "no such column"} {
		if strings.Contains(msg, s) {
			return "failed: " + s, workload.ShortErr(err)
		}
	}
	return "failed", workload.ShortErr(err)
}
