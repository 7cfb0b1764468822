package main

// The worker: a hidden subcommand the demo and bench re-execute
// (os.Executable) once per worker process. It talks to its parent in lines:
//
//	worker → READY
//	parent → MIGRATE          worker migrates spec.MigrateDB (if set)
//	worker → MIGRATED {json}  its migrationOutcome
//	parent → OPEN PATH        the database the workload runs on
//	worker → OPENED
//	parent → GO               run the workload for spec.Duration
//	worker → P COMMITS ERRORS every 100 ms while running
//	worker → RESULT {json}    its workerResult, then it exits
//
// The barriers make every worker migrate at the same moment (the race a
// naive application has at start-up) and start the workload together.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	msqlite "github.com/golang-migrate/migrate/v4/database/sqlite3"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/mattn/go-sqlite3"
	"github.com/spf13/cobra"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/lease"
	cleomigrate "github.com/cleocode/cleolease/migrate"
)

// workerSpec is what the parent asks of one worker process.
type workerSpec struct {
	Index      int           `json:"index"`
	Driver     string        `json:"driver"`      // "raw" or "cleolease"
	RawQuery   string        `json:"raw_query"`   // go-sqlite3 DSN query (raw)
	LeaseQuery string        `json:"lease_query"` // extra DSN query (cleolease)
	Workload   string        `json:"workload"`    // "tracker" or "counter"
	Goroutines int           `json:"goroutines"`
	Duration   time.Duration `json:"duration"`
	Work       time.Duration `json:"work"` // simulated work inside each transaction
	MigrateDB  string        `json:"migrate_db,omitempty"`
	Migrations string        `json:"migrations,omitempty"` // "" embedded demo set, else a directory
	Table      string        `json:"table"`
}

// migrationOutcome is how one worker's start-up migration went.
type migrationOutcome struct {
	PID     int           `json:"pid"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Outcome string        `json:"outcome"` // "ok", "no change", or a failure class
	Error   string        `json:"error,omitempty"`
}

// workerResult is one worker's workload figures.
type workerResult struct {
	Index     int               `json:"index"`
	PID       int               `json:"pid"`
	Commits   int64             `json:"commits"`
	Errors    map[string]int64  `json:"errors"`
	Samples   map[string]string `json:"samples,omitempty"` // one message per error class
	Ops       map[string]int64  `json:"ops"`
	Latencies []int64           `json:"lat_us"` // committed transactions, begin to commit
	// Landed is, for each committed write, the time from its first attempt
	// to its commit: failed attempts (lock errors) are retried at once, as
	// an application would, and their time counts.
	Landed []int64 `json:"land_us"`
	// Lease is the cleolease driver's counters in this process (nil raw).
	Lease *lease.Stats `json:"lease,omitempty"`
}

func newWorkerCmd() *cobra.Command {
	var spec string
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
			return runWorker(cmd.Context(), s, os.Stdin, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().StringVar(&spec, "spec", "", "worker spec (JSON)")
	return cmd
}

type workerIO struct {
	in  *bufio.Scanner
	mu  sync.Mutex
	out io.Writer
}

func (w *workerIO) say(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.out, format+"\n", args...)
}

func (w *workerIO) expect(prefix string) (string, error) {
	if !w.in.Scan() {
		return "", fmt.Errorf("parent went away before %s", prefix)
	}
	line := w.in.Text()
	if !strings.HasPrefix(line, prefix) {
		return "", fmt.Errorf("parent said %q, want %s", line, prefix)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, prefix)), nil
}

func runWorker(ctx context.Context, s workerSpec, stdin io.Reader, stdout io.Writer) error {
	w := &workerIO{in: bufio.NewScanner(stdin), out: stdout}
	var step func() (migrationOutcome, *sql.DB)
	if s.MigrateDB != "" {
		step = prepareMigration(ctx, s)
	}
	w.say("READY")
	if _, err := w.expect("MIGRATE"); err != nil {
		return err
	}
	var out migrationOutcome
	var mdb *sql.DB // the cleolease handle that migrated, reused for the workload
	if step != nil {
		out, mdb = step()
	}
	out.PID = os.Getpid()
	b, _ := json.Marshal(out)
	w.say("MIGRATED %s", b)

	path, err := w.expect("OPEN")
	if err != nil {
		return err
	}
	var db *sql.DB
	if mdb != nil && path == s.MigrateDB {
		db = mdb
	} else {
		if mdb != nil {
			mdb.Close()
		}
		if db, err = openWorkload(ctx, s, path); err != nil {
			return err
		}
	}
	defer db.Close()
	wl, err := newWorkload(ctx, s, db)
	if err != nil {
		return err
	}
	w.say("OPENED")
	if _, err := w.expect("GO"); err != nil {
		return err
	}
	res := wl.run(ctx, s, func(commits, errs int64) { w.say("P %d %d", commits, errs) })
	res.Index, res.PID = s.Index, os.Getpid()
	if s.Driver == "cleolease" {
		if st, err := cleolease.Stats(ctx, db); err == nil {
			res.Lease = &st
		}
	}
	b, err = json.Marshal(res)
	if err != nil {
		return err
	}
	w.say("RESULT %s", b)
	return nil
}

// dsnFor is the DSN a worker opens path with.
func dsnFor(s workerSpec, path string) (string, error) {
	if s.Driver == "raw" {
		return fileURI(path, s.RawQuery)
	}
	return fileURI(path, s.LeaseQuery)
}

func openWorkload(ctx context.Context, s workerSpec, path string) (*sql.DB, error) {
	dsn, err := dsnFor(s, path)
	if err != nil {
		return nil, err
	}
	name := "sqlite3"
	if s.Driver == "cleolease" {
		name = "cleolease"
	}
	db, err := sql.Open(name, dsn)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func workerMigrations(s workerSpec) (fs.FS, error) {
	var fsys fs.FS = demoMigrations()
	if s.Migrations != "" {
		fsys = os.DirFS(s.Migrations)
	}
	return countingFS(fsys, os.Getpid())
}

// prepareMigration does, before the start barrier, what each driver's
// user does before migrating, and returns the migration step itself, run
// when the barrier opens: raw, every process runs golang-migrate itself
// (the naive application: its own *sql.DB, WithInstance, then Up);
// cleolease, the first connection runs the migrations at cold open
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
	dsn, err := dsnFor(s, s.MigrateDB)
	if err != nil {
		return failed(err)
	}
	if s.Driver == "raw" {
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
	db, err := cleolease.OpenDB(*cfg) // no I/O yet
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
		return "refused: dirty", shortErr(err)
	case isLockErr(err):
		return "failed: database is locked", shortErr(err)
	}
	msg := err.Error()
	for _, s := range []string{"already exists", "duplicate column", "UNIQUE constraint failed", "no such table", "no such column"} {
		if strings.Contains(msg, s) {
			return "failed: " + s, shortErr(err)
		}
	}
	return "failed", shortErr(err)
}

// shortErr is an error on one line without the migration text
// golang-migrate appends ("… in line 0: CREATE TABLE …").
func shortErr(err error) string {
	s := oneLine(err.Error())
	if i := strings.Index(s, " in line "); i > 0 {
		s = s[:i]
	}
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

func isLockErr(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "database is locked") || strings.Contains(s, "database table is locked") || strings.Contains(s, "SQLITE_BUSY")
}

// classifyTx names a failed transaction's error class.
func classifyTx(err error) string {
	switch {
	case isLockErr(err):
		return "locked"
	case errors.Is(err, cleolease.ErrLeaseLost):
		return "lease lost"
	case errors.Is(err, cleolease.ErrLeaseUnavailable):
		return "lease unavailable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "other"
}

// workload is one kind of write transaction mix.
type workload interface {
	// tx runs one transaction on db and names its operation.
	tx(ctx context.Context, db *sql.DB, g *goroutineState) (op string, err error)
}

type goroutineState struct {
	rng   *rand.Rand
	index int // worker index
	g     int // goroutine index
	work  time.Duration
}

// think simulates work done inside the transaction.
func (g *goroutineState) think() {
	if g.work > 0 {
		time.Sleep(g.work)
	}
}

type workloadRunner struct {
	db *sql.DB
	w  workload
}

func newWorkload(ctx context.Context, s workerSpec, db *sql.DB) (*workloadRunner, error) {
	var w workload
	switch s.Workload {
	case "tracker":
		t := &tracker{}
		if err := t.load(ctx, db); err != nil {
			return nil, err
		}
		w = t
	case "counter":
		w = counter{}
	default:
		return nil, fmt.Errorf("unknown workload %q", s.Workload)
	}
	return &workloadRunner{db: db, w: w}, nil
}

func (r *workloadRunner) run(ctx context.Context, s workerSpec, progress func(commits, errs int64)) workerResult {
	deadline := time.Now().Add(s.Duration)
	var commits, errs atomic.Int64
	res := workerResult{Errors: map[string]int64{}, Samples: map[string]string{}, Ops: map[string]int64{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range max(s.Goroutines, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &goroutineState{rng: rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g))), index: s.Index, g: g, work: s.Work}
			var lat, landed []int64
			errsBy := map[string]int64{}
			samples := map[string]string{}
			ops := map[string]int64{}
			var first time.Time // the first attempt of the write being retried
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if first.IsZero() {
					first = t0
				}
				op, err := r.w.tx(ctx, r.db, st)
				if err != nil {
					c := classifyTx(err)
					errsBy[c]++
					if _, ok := samples[c]; !ok {
						samples[c] = shortErr(err)
					}
					errs.Add(1)
					continue
				}
				lat = append(lat, time.Since(t0).Microseconds())
				landed = append(landed, time.Since(first).Microseconds())
				first = time.Time{}
				ops[op]++
				commits.Add(1)
			}
			mu.Lock()
			res.Latencies = append(res.Latencies, lat...)
			res.Landed = append(res.Landed, landed...)
			for k, v := range errsBy {
				res.Errors[k] += v
			}
			for k, v := range samples {
				res.Samples[k] = v
			}
			for k, v := range ops {
				res.Ops[k] += v
			}
			mu.Unlock()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			res.Commits = commits.Load()
			progress(res.Commits, errs.Load())
			return res
		case <-tick.C:
			progress(commits.Load(), errs.Load())
		}
	}
}

// tracker is the demo's task-tracker mix. Every transaction starts by
// reading its project's counters and writes them back incremented
// (read-modify-write), and inserts one audit row (activity), so the data
// can be checked afterwards: projects.rev equals the project's audit rows,
// projects.open_tasks its open tasks, tasks.comment_count the task's
// comments, and the audit rows the commits the workers saw succeed.
type tracker struct {
	projects []int64
	tags     []string
}

func (t *tracker) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT id FROM projects ORDER BY id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		t.projects = append(t.projects, id)
	}
	rows.Close()
	if len(t.projects) == 0 {
		return errors.New("tracker workload: no projects")
	}
	rows, err = db.QueryContext(ctx, `SELECT name FROM tags ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		t.tags = append(t.tags, n)
	}
	if len(t.tags) == 0 {
		t.tags = []string{"none"}
	}
	return rows.Err()
}

func (t *tracker) tx(ctx context.Context, db *sql.DB, g *goroutineState) (string, error) {
	p := t.projects[g.rng.IntN(len(t.projects))]
	actor := fmt.Sprintf("worker-%d.%d", g.index, g.g)
	now := time.Now().UnixMilli()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	op, err := t.body(ctx, tx, g, p, actor, now)
	if err != nil {
		tx.Rollback()
		return "", err
	}
	return op, tx.Commit()
}

func (t *tracker) body(ctx context.Context, tx *sql.Tx, g *goroutineState, p int64, actor string, now int64) (string, error) {
	var rev, open int64
	if err := tx.QueryRowContext(ctx, `SELECT rev, open_tasks FROM projects WHERE id = ?`, p).Scan(&rev, &open); err != nil {
		return "", err
	}
	g.think()
	var op string
	var taskID sql.NullInt64
	switch r := g.rng.IntN(100); {
	case r < 40: // a new task, its id from INSERT … RETURNING
		op = "add task"
		var id int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO tasks (project_id, title, priority) VALUES (?, ?, ?) RETURNING id`,
			p, fmt.Sprintf("task by %s at %d", actor, now), 1+g.rng.IntN(9)).Scan(&id); err != nil {
			return "", err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO task_tags (task_id, tag_id) SELECT ?, id FROM tags WHERE name = ?`,
			id, t.tags[g.rng.IntN(len(t.tags))]); err != nil {
			return "", err
		}
		taskID = sql.NullInt64{Int64: id, Valid: true}
		open++
	case r < 75: // a comment on a recent task, and the task's counter
		op = "comment"
		var id, n int64
		err := tx.QueryRowContext(ctx, `SELECT id, comment_count FROM tasks WHERE project_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?`,
			p, g.rng.IntN(10)).Scan(&id, &n)
		if errors.Is(err, sql.ErrNoRows) {
			err = tx.QueryRowContext(ctx, `SELECT id, comment_count FROM tasks WHERE project_id = ? ORDER BY id DESC LIMIT 1`, p).Scan(&id, &n)
		}
		if err != nil {
			return "", err
		}
		var cid, created int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO comments (task_id, author, body) VALUES (?, ?, ?) RETURNING id, created_at`,
			id, actor, "looks good to me").Scan(&cid, &created); err != nil {
			return "", err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET comment_count = ?, updated_at = ? WHERE id = ?`, n+1, created, id); err != nil {
			return "", err
		}
		taskID = sql.NullInt64{Int64: id, Valid: true}
	default: // batch update: move up to 5 tasks on the board
		op = "batch update"
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'done', updated_at = ? WHERE id IN
			(SELECT id FROM tasks WHERE project_id = ? AND status = 'doing' ORDER BY priority, id LIMIT 5)`, now/1000, p); err != nil {
			return "", err
		}
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'doing', updated_at = ? WHERE id IN
			(SELECT id FROM tasks WHERE project_id = ? AND status = 'open' ORDER BY priority, id LIMIT 5)`, now/1000, p)
		if err != nil {
			return "", err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return "", err
		}
		open -= k
	}
	if _, err := tx.ExecContext(ctx, `UPDATE projects SET rev = ?, open_tasks = ? WHERE id = ?`, rev+1, open, p); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO activity (project_id, task_id, actor, kind, at) VALUES (?, ?, ?, ?, ?)`,
		p, taskID, actor, op, now); err != nil {
		return "", err
	}
	return op, nil
}

// counter is the contention benchmark's transaction: read a counter,
// write it back plus one, log the write (lost updates show as counter !=
// rows).
type counter struct{}

func (counter) tx(ctx context.Context, db *sql.DB, g *goroutineState) (string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	var n int64
	err = tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n)
	if err == nil {
		g.think()
		_, err = tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO log (proc, g, seen) VALUES (?, ?, ?)`, g.index, g.g, n)
	}
	if err != nil {
		tx.Rollback()
		return "", err
	}
	return "rmw", tx.Commit()
}
