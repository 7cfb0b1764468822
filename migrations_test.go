package cleolease_test

// Cold-open migrations (issue 6), against real processes where it matters:
// the test binary re-executes itself as the role registered below (see
// testmain_test.go).

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/migrate"
)

func init() {
	roles["migrate-open"] = roleMigrateOpen
}

// ---------------------------------------------------------------------------
// Child role.

// roleMigrateOpen opens CLEOLEASE_DSN (with a base driver whose ConnectHook
// registers cleo_stall()), says "READY", waits for a "go" line, then makes
// its first call — a query of the version table, or a Ping when
// CLEOLEASE_FIRST=ping — and reports "OK version dirty unix-nanos" (the
// nanos taken as that first call returned) or "ERR message". With
// CLEOLEASE_STALL=1, cleo_stall() says "MID" and never returns.
func roleMigrateOpen() int {
	fail := func(err error) int {
		var se sqlite3.Error
		if errors.As(err, &se) {
			err = fmt.Errorf("%w [%T, extended code %d]", err, err, se.ExtendedCode)
		}
		fmt.Println("ERR", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	cfg, err := cleolease.ParseDSN(os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		return fail(err)
	}
	if os.Getenv("CLEOLEASE_LOG") == "1" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	stall := os.Getenv("CLEOLEASE_STALL") == "1"
	cfg.BaseDriver = &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		return c.RegisterFunc("cleo_stall", func() int64 {
			if stall {
				fmt.Println("MID")
				select {} // killed here
			}
			return 0
		}, false)
	}}
	conn, err := cleolease.NewConnector(cfg)
	if err != nil {
		return fail(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	fmt.Println("READY")
	if in := bufio.NewScanner(os.Stdin); !in.Scan() || in.Text() != "go" {
		return fail(errors.New("no go"))
	}
	var version int
	var dirty bool
	query := func() error {
		return db.QueryRow(`SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty)
	}
	if os.Getenv("CLEOLEASE_FIRST") == "ping" {
		err = db.Ping()
	} else {
		err = query()
	}
	at := time.Now().UnixNano()
	if err == nil && os.Getenv("CLEOLEASE_FIRST") == "ping" {
		err = query()
		if err != nil {
			err = fmt.Errorf("query after ping: %w", err)
		}
	}
	if err != nil {
		return fail(err)
	}
	fmt.Printf("OK %d %t %d\n", version, dirty, at)
	return 0
}

// ---------------------------------------------------------------------------
// Helpers (prefixed mg to stay clear of the other test files' helpers).

// mgFixture returns the absolute path of testdata/<name>.
func mgFixture(t testing.TB, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// mgCopy copies the fixture directory name into a temporary directory.
func mgCopy(t testing.TB, name string) string {
	t.Helper()
	dst := testdir.New(t)
	if err := os.CopyFS(dst, os.DirFS(mgFixture(t, name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// mgDSN is a cleolease DSN for the file path with the migrations source
// (a directory, made a file:// URL, or a registered name) and extra
// parameters.
func mgDSN(path, source string, extra ...string) string {
	if filepath.IsAbs(source) {
		// golang-migrate's file source reads "file://C:/dir" on Windows
		// (host "C:", path "/dir"); a backslash would be a bad port.
		source = "file://" + filepath.ToSlash(source)
	}
	q := append([]string{"_migrations=" + url.QueryEscape(source)}, extra...)
	return "file:" + path + "?" + strings.Join(q, "&")
}

// mgOpen opens a cleolease *sql.DB closed at the end of the test.
func mgOpen(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mgRaw opens the file on plain go-sqlite3 for looking at it.
func mgRaw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mgFresh creates an empty database file in WAL mode. Several processes
// creating the same file at once can fail in go-sqlite3's Open with
// SQLITE_BUSY (its PRAGMA journal_mode=WAL converting the file, which
// SQLite's busy handler does not cover); that is the connection open's
// business, not the cold open's, so the racing tests start from an empty
// WAL file: no schema, no lease tables, no version table.
func mgFresh(t testing.TB, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
	if err == nil {
		err = db.Ping()
		db.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// mgVersion reads the version table.
func mgVersion(t testing.TB, q interface {
	QueryRow(string, ...any) *sql.Row
}) (int, bool) {
	t.Helper()
	var v int
	var dirty bool
	if err := q.QueryRow(`SELECT version, dirty FROM schema_migrations`).Scan(&v, &dirty); err != nil {
		t.Fatalf("reading the version table: %v", err)
	}
	return v, dirty
}

// mgRan counts the rows each migration body left in the ran table.
func mgRan(t testing.TB, q interface {
	Query(string, ...any) (*sql.Rows, error)
}) map[int]int {
	t.Helper()
	rows, err := q.Query(`SELECT version, count(*) FROM ran GROUP BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var v, n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		out[v] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mgWantRan checks that migrations 1..n each ran exactly once.
func mgWantRan(t testing.TB, got map[int]int, n int) {
	t.Helper()
	want := map[int]int{}
	for v := 1; v <= n; v++ {
		want[v] = 1
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("migration bodies committed (version: runs) = %v, want each of 1..%d once", got, n)
	}
}

func mgTableExists(t testing.TB, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// mgMigrationError extracts the *MigrationError of err.
func mgMigrationError(t testing.TB, err error) *cleolease.MigrationError {
	t.Helper()
	var me *cleolease.MigrationError
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *MigrationError", err, err)
	}
	return me
}

// mgRace runs n migrate-open children on dsn, releases them together and
// returns their "OK" reports and the start time (wall clock, taken just
// before the first "go" was sent).
func mgRace(t testing.TB, n int, dsn string, env ...string) ([]string, time.Time) {
	t.Helper()
	kids := make([]*child, n)
	for i := range kids {
		kids[i] = startChild(t, "migrate-open", dsn, env...)
	}
	for _, k := range kids {
		k.expect("READY")
	}
	start := time.Now()
	for _, k := range kids {
		k.send("go")
	}
	out := make([]string, n)
	for i, k := range kids {
		out[i] = k.expect("OK")
	}
	return out, start
}

// ---------------------------------------------------------------------------
// Tests.

// Sixteen processes open a fresh file with 20 migrations at the same
// moment: each migration body ran exactly once, every process saw the
// final version from its first query, and none got an error.
func TestColdOpenSixteenProcesses(t *testing.T) {
	path := filepath.Join(testdir.New(t), "race.db")
	mgFresh(t, path)
	reports, _ := mgRace(t, 16, mgDSN(path, mgFixture(t, "migrations")))
	for i, r := range reports {
		if f := strings.Fields(r); len(f) != 3 || f[0] != "20" || f[1] != "false" {
			t.Errorf("process %d: first query saw %q, want version 20, clean", i, r)
		}
	}
	raw := mgRaw(t, path)
	if v, dirty := mgVersion(t, raw); v != 20 || dirty {
		t.Fatalf("version %d dirty=%t, want 20 clean", v, dirty)
	}
	mgWantRan(t, mgRan(t, raw), 20)
}

// A failing migration: the typed error names its version and cause; the
// database stays at the previous version, clean, with nothing of the
// failed body; the failure is not remembered, and once the file is fixed
// the next open finishes.
func TestColdOpenFailingMigration(t *testing.T) {
	dir := mgCopy(t, "migrations")
	file := filepath.Join(dir, "5_table_5.up.sql")
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := "CREATE TABLE t_5 (id INTEGER PRIMARY KEY);\nINSERT INTO ran (version) VALUES (5);\nINSERT INTO no_such_table VALUES (1);\n"
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testdir.New(t), "fail.db")
	db := mgOpen(t, mgDSN(path, dir))
	raw := mgRaw(t, path)

	for attempt := 1; attempt <= 2; attempt++ { // a failure is not cached
		err := db.Ping()
		me := mgMigrationError(t, err)
		if me.Version != 5 || me.Name != "table_5" || me.File != "5_table_5.up.sql" || me.Down || me.Current != 4 || me.Dirty {
			t.Fatalf("attempt %d: %+v, want migration 5 (5_table_5.up.sql), left at 4 clean", attempt, me)
		}
		if !errors.Is(err, cleolease.ErrMigrationFailed) || errors.Is(err, cleolease.ErrMigrationDirty) {
			t.Fatalf("attempt %d: %v should match ErrMigrationFailed only", attempt, err)
		}
		var se sqlite3.Error
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "no such table: no_such_table") {
			t.Fatalf("attempt %d: %v does not carry SQLite's error", attempt, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "migration 5 (5_table_5.up.sql) failed") || !strings.Contains(msg, "left at version 4, clean") {
			t.Fatalf("attempt %d: message %q", attempt, msg)
		}
		if v, dirty := mgVersion(t, raw); v != 4 || dirty {
			t.Fatalf("attempt %d: version %d dirty=%t, want 4 clean", attempt, v, dirty)
		}
		if mgTableExists(t, raw, "t_5") {
			t.Fatalf("attempt %d: the failed body's CREATE TABLE was committed", attempt)
		}
		mgWantRan(t, mgRan(t, raw), 4)
	}

	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatalf("after the fix: %v", err)
	}
	if v, dirty := mgVersion(t, raw); v != 20 || dirty {
		t.Fatalf("version %d dirty=%t, want 20 clean", v, dirty)
	}
	mgWantRan(t, mgRan(t, raw), 20)
}

// SIGKILL of the process running a long migration: nothing of the
// migration is visible meanwhile, a process that opens the file waits for
// it (even once the holder's heartbeat is older than its TTL, which the
// migration's open transaction holds back), and once the holder is killed
// the waiter completes the migration: version and data are right.
func TestColdOpenKilledMidMigration(t *testing.T) {
	path := filepath.Join(testdir.New(t), "kill.db")
	dsn := mgDSN(path, mgFixture(t, "migrations_stall"), "_lease_ttl=300ms")
	a := startChild(t, "migrate-open", dsn, "CLEOLEASE_STALL=1")
	a.expect("READY")
	a.send("go")
	a.expect("MID") // inside migration 2, after its first two INSERTs

	raw := mgRaw(t, path)
	if v, dirty := mgVersion(t, raw); v != 1 || dirty {
		t.Fatalf("during migration 2: version %d dirty=%t, want 1 clean", v, dirty)
	}
	mgWantRan(t, mgRan(t, raw), 1)
	leaseAge := func() (age, ttl int64) {
		t.Helper()
		var heartbeat int64
		if err := raw.QueryRow(`SELECT heartbeat_at, ttl_ms FROM _writer_leases
			WHERE scope = ? AND lane = ? AND active = 1 AND holder_pid = ?`,
			migrate.Scope, migrate.Lane, a.Cmd.Process.Pid).Scan(&heartbeat, &ttl); err != nil {
			t.Fatalf("the migrating process holds no cold-open lease: %v", err)
		}
		return time.Now().UnixMilli() - heartbeat, ttl
	}
	leaseAge()

	// An open in this process waits for the lease and gives up with its
	// context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := mgOpen(t, dsn).PingContext(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("open while another process migrates: %v, want the context's deadline", err)
	}

	// The holder's heartbeat cannot be written while its migration holds
	// SQLite's write lock: once its row looks expired by its TTL, start a
	// waiter, which must still wait (the holder provably lives).
	eventually(t, "the cold-open lease row to be older than its TTL", func() bool {
		age, ttl := leaseAge()
		return age > 2*ttl
	})
	b := startChild(t, "migrate-open", dsn)
	b.expect("READY")
	b.send("go")
	if v, _ := mgVersion(t, raw); v != 1 {
		t.Fatalf("version %d while the first migrator lives, want 1", v)
	}

	if err := a.Cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	if got := b.expect("OK"); !strings.HasPrefix(got, "3 false ") {
		t.Fatalf("the next process saw %q, want version 3 clean", got)
	}
	if v, dirty := mgVersion(t, raw); v != 3 || dirty {
		t.Fatalf("version %d dirty=%t, want 3 clean", v, dirty)
	}
	mgWantRan(t, mgRan(t, raw), 3)
	rows, err := raw.Query(`SELECT v FROM data ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var data []string
	for rows.Next() {
		var v string
		rows.Scan(&v)
		data = append(data, v)
	}
	if fmt.Sprint(data) != "[before the stall after the stall]" {
		t.Fatalf("data = %q", data)
	}
}

// A migration that manages its own transaction and sets a PRAGMA applies
// with _migrations_no_tx_wrap=true; under the default wrapper it fails
// cleanly instead.
func TestColdOpenNoTxWrap(t *testing.T) {
	src := mgFixture(t, "migrations_notx")

	t.Run("wrapped", func(t *testing.T) {
		path := filepath.Join(testdir.New(t), "wrapped.db")
		err := mgOpen(t, mgDSN(path, src)).Ping()
		if me := mgMigrationError(t, err); me.Version != 2 || me.Current != 1 || me.Dirty {
			t.Fatalf("%+v, want migration 2 failed, left at 1 clean", me)
		}
		if v, dirty := mgVersion(t, mgRaw(t, path)); v != 1 || dirty {
			t.Fatalf("version %d dirty=%t, want 1 clean", v, dirty)
		}
	})

	t.Run("no_tx_wrap", func(t *testing.T) {
		path := filepath.Join(testdir.New(t), "notx.db")
		db := mgOpen(t, mgDSN(path, src, "_migrations_no_tx_wrap=true"))
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		if v, dirty := mgVersion(t, db); v != 2 || dirty {
			t.Fatalf("version %d dirty=%t, want 2 clean", v, dirty)
		}
		var created, children, problems, fk int
		if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('parent') WHERE name = 'created'`).Scan(&created); err != nil || created != 1 {
			t.Fatalf("rebuilt parent has no created column (%d, %v)", created, err)
		}
		if err := db.QueryRow(`SELECT count(*) FROM child JOIN parent ON parent.id = child.parent_id`).Scan(&children); err != nil || children != 2 {
			t.Fatalf("children joined to the rebuilt parent: %d, %v", children, err)
		}
		if err := db.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&problems); err != nil || problems != 0 {
			t.Fatalf("foreign_key_check: %d, %v", problems, err)
		}
		// The PRAGMA was the private connection's: users keep foreign keys.
		if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
			t.Fatalf("foreign_keys on a user connection = %d, %v", fk, err)
		}
	})
}

// A NoTxWrap migration that fails half-way leaves the database dirty: every
// open then fails with ErrMigrationDirty naming the version, nothing is
// forced, and after a repair and migrate.Force the next open finishes.
func TestColdOpenDirty(t *testing.T) {
	dir := mgCopy(t, "migrations_notx")
	file := filepath.Join(dir, "3_half.up.sql")
	if err := os.WriteFile(file, []byte("CREATE TABLE half (x INTEGER);\nINSERT INTO no_such_table VALUES (1);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testdir.New(t), "dirty.db")
	cfg, err := cleolease.ParseDSN(mgDSN(path, dir, "_migrations_no_tx_wrap=true"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := cleolease.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	raw := mgRaw(t, path)

	err = db.Ping()
	me := mgMigrationError(t, err)
	if me.Version != 3 || me.Name != "half" || !me.Dirty || me.Current != 3 ||
		!errors.Is(err, cleolease.ErrMigrationFailed) || !errors.Is(err, cleolease.ErrMigrationDirty) {
		t.Fatalf("%v (%+v), want migration 3 failed, left dirty at 3", err, me)
	}
	err = db.Ping()
	me = mgMigrationError(t, err)
	if me.Current != 3 || !me.Dirty || !errors.Is(err, cleolease.ErrMigrationDirty) || errors.Is(err, cleolease.ErrMigrationFailed) ||
		!strings.Contains(err.Error(), "dirty at version 3 (3_half.up.sql)") || me.File != "3_half.up.sql" {
		t.Fatalf("reopen: %v, want the dirty error naming version 3", err)
	}
	if v, dirty := mgVersion(t, raw); v != 3 || !dirty {
		t.Fatalf("version %d dirty=%t, want 3 dirty (nothing forced)", v, dirty)
	}

	// Repair by hand, force the version the schema is at, fix the file.
	if _, err := raw.Exec(`DROP TABLE half`); err != nil {
		t.Fatal(err)
	}
	opts := migrate.Options{DSN: cfg.SQLiteDSN, Base: mattn.For(nil), FS: os.DirFS(dir), Engine: conn.Engine()}
	if err := migrate.Force(context.Background(), opts, 2); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("CREATE TABLE half (x INTEGER);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	if v, dirty := mgVersion(t, raw); v != 3 || dirty {
		t.Fatalf("version %d dirty=%t, want 3 clean", v, dirty)
	}
}

// The user's *sql.DB stays usable after its first connections ran the
// migrations: concurrent first connects share one run, a second *sql.DB on
// the file runs nothing, and both close cleanly.
func TestColdOpenUserDBStaysUsable(t *testing.T) {
	cleolease.RegisterMigrations("cleolease-test-usable", os.DirFS(mgFixture(t, "migrations")))
	path := filepath.Join(testdir.New(t), "usable.db")
	dsn := mgDSN(path, "cleolease-test-usable")
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(4)
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			c, err := db.Conn(ctx)
			if err == nil {
				var v int
				var dirty bool
				err = c.QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&v, &dirty)
				if err == nil && (v != 20 || dirty) {
					err = fmt.Errorf("a first connection saw version %d dirty=%t", v, dirty)
				}
				c.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	mgWantRan(t, mgRan(t, db), 20)

	// Plain use: statements, a transaction, a prepared statement.
	if _, err := db.Exec(`INSERT INTO items (name) VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO t_2 (v) VALUES ('b')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	st, err := db.Prepare(`SELECT count(*) FROM t_2`)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.QueryRow().Scan(&n); err != nil || n != 2 {
		t.Fatalf("count = %d, %v", n, err)
	}
	st.Close()

	// A second *sql.DB on the file finds the work done.
	db2 := mgOpen(t, dsn)
	if err := db2.Ping(); err != nil {
		t.Fatal(err)
	}
	mgWantRan(t, mgRan(t, db2), 20)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db2.Close(); err != nil {
		t.Fatal(err)
	}
}

// Concurrent first connects in one process share one run: a connect whose
// context ends gives up alone, the run goes on for the others, and a
// later connect runs nothing.
func TestColdOpenWaitersShareOneRun(t *testing.T) {
	path := filepath.Join(testdir.New(t), "share.db")
	cfg, err := cleolease.ParseDSN(mgDSN(path, mgFixture(t, "migrations_stall")))
	if err != nil {
		t.Fatal(err)
	}
	in, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cfg.BaseDriver = &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		return c.RegisterFunc("cleo_stall", func() int64 {
			once.Do(func() {
				close(in)
				<-release
			})
			return 0
		}, false)
	}}
	var mu sync.Mutex
	applied := 0
	cfg.Logger = slog.New(recordFunc(func(r slog.Record) {
		if r.Message == "cleolease: migration applied" {
			mu.Lock()
			applied++
			mu.Unlock()
		}
	}))
	conn, err := cleolease.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(3)

	first := make(chan error, 1)
	go func() {
		c, err := db.Conn(context.Background())
		if err == nil {
			c.Close()
		}
		first <- err
	}()
	<-in // the run is inside migration 2

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = db.Conn(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a connect whose deadline passes while it waits: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first connect: %v", err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	if v, dirty := mgVersion(t, db); v != 3 || dirty {
		t.Fatalf("version %d dirty=%t", v, dirty)
	}
	mgWantRan(t, mgRan(t, db), 3)
	mu.Lock()
	defer mu.Unlock()
	if applied != 3 {
		t.Fatalf("%d migrations applied, want 3 (one run)", applied)
	}
}

// recordFunc is a slog.Handler calling a function for every record.
type recordFunc func(slog.Record)

func (f recordFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (f recordFunc) Handle(_ context.Context, r slog.Record) error { f(r); return nil }
func (f recordFunc) WithAttrs([]slog.Attr) slog.Handler            { return f }
func (f recordFunc) WithGroup(string) slog.Handler                 { return f }

// A shared in-memory database is migrated in-process, and again when it
// was dropped with its last connection.
func TestColdOpenSharedMemory(t *testing.T) {
	cleolease.RegisterMigrations("cleolease-test-mem", os.DirFS(mgFixture(t, "migrations")))
	dsn := "file:cleolease-test-mem?mode=memory&cache=shared&_migrations=cleolease-test-mem"
	for round := 1; round <= 2; round++ {
		db, err := sql.Open("cleolease", dsn)
		if err != nil {
			t.Fatal(err)
		}
		if v, dirty := mgVersion(t, db); v != 20 || dirty {
			t.Fatalf("round %d: version %d dirty=%t", round, v, dirty)
		}
		mgWantRan(t, mgRan(t, db), 20)
		if err := db.Close(); err != nil { // drops the database
			t.Fatal(err)
		}
	}
}

// Read-only opens never migrate (nor create the version table); queries
// against tables a pending migration would create fail with SQLite's own
// error.
func TestColdOpenReadOnly(t *testing.T) {
	path := filepath.Join(testdir.New(t), "ro.db")
	if _, err := mgRaw(t, path).Exec(`CREATE TABLE existing (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db := mgOpen(t, mgDSN(path, mgFixture(t, "migrations"), "mode=ro"))
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	if mgTableExists(t, db, "schema_migrations") {
		t.Fatal("a read-only open created the version table")
	}
	_, err := db.Exec(`SELECT count(*) FROM items`)
	var se sqlite3.Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("query of a missing table: %v (%T), want SQLite's error", err, err)
	}
}

// Config.MigrationsFS wins over _migrations; an unknown _migrations name is
// reported at connect; mode off migrates without the lease.
func TestColdOpenSources(t *testing.T) {
	t.Run("fs_wins", func(t *testing.T) {
		path := filepath.Join(testdir.New(t), "fs.db")
		cfg, err := cleolease.ParseDSN(mgDSN(path, "file:///does/not/exist"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.MigrationsFS = os.DirFS(mgFixture(t, "migrations"))
		db, err := cleolease.OpenDB(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if v, _ := mgVersion(t, db); v != 20 {
			t.Fatalf("version %d", v)
		}
	})
	t.Run("unknown_name", func(t *testing.T) {
		path := filepath.Join(testdir.New(t), "unknown.db")
		err := mgOpen(t, mgDSN(path, "cleolease-test-never-registered")).Ping()
		if err == nil || !strings.Contains(err.Error(), "RegisterMigrations") {
			t.Fatalf("Ping = %v, want an error naming RegisterMigrations", err)
		}
	})
	// A plain directory path (a path separator or a leading '.') is a
	// directory, as the CLI's --source takes it (issue 16, item 3).
	for _, dir := range []string{"./testdata/migrations", "testdata/migrations", mgFixture(t, "migrations")} {
		t.Run("plain_directory "+dir, func(t *testing.T) {
			path := filepath.Join(testdir.New(t), "dir.db")
			db := mgOpen(t, "file:"+path+"?_migrations="+url.QueryEscape(dir))
			if v, _ := mgVersion(t, db); v != 20 {
				t.Fatalf("version %d", v)
			}
		})
	}
	t.Run("plain_directory_missing", func(t *testing.T) {
		path := filepath.Join(testdir.New(t), "missing.db")
		err := mgOpen(t, "file:"+path+"?_migrations=./testdata/no-such-dir").Ping()
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "./testdata/no-such-dir") {
			t.Fatalf("Ping = %v, want fs.ErrNotExist naming the directory", err)
		}
	})
	t.Run("directory_names_cannot_be_registered", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("RegisterMigrations(\"./m\", …) did not panic")
			}
		}()
		cleolease.RegisterMigrations("./m", os.DirFS(mgFixture(t, "migrations")))
	})
	t.Run("mode_off", func(t *testing.T) {
		path := filepath.Join(testdir.New(t), "off.db")
		db := mgOpen(t, mgDSN(path, mgFixture(t, "migrations"), "_lease_mode=off"))
		if v, _ := mgVersion(t, db); v != 20 {
			t.Fatalf("version %d", v)
		}
		if mgTableExists(t, db, "_writer_leases") {
			t.Fatal("mode off created lease tables")
		}
	})
	t.Run("custom_table", func(t *testing.T) {
		path := filepath.Join(testdir.New(t), "table.db")
		db := mgOpen(t, mgDSN(path, mgFixture(t, "migrations"), "_migrations_table=app_versions"))
		var v int
		if err := db.QueryRow(`SELECT version FROM app_versions`).Scan(&v); err != nil || v != 20 {
			t.Fatalf("app_versions: %d, %v", v, err)
		}
		if mgTableExists(t, db, "schema_migrations") {
			t.Fatal("the default version table was created too")
		}
	})
}

// BenchmarkColdOpen compares the wall time of 16 processes opening a fresh
// file with 20 migrations at once against one process doing it alone, each
// from a start barrier to the last process's first Ping returning, and
// reports both (ms) and their ratio (x-ratio). For scale it also reports
// the floor: 16 processes opening a file already migrated (ms-16-current),
// where the cold open is one read per process. "light" is the test
// fixture (DDL only); "heavy" adds 20,000 inserted rows to each migration,
// to show that the cost of racing is a fixed overhead, not a multiple of
// the migration work.
func BenchmarkColdOpen(b *testing.B) {
	b.Run("light", func(b *testing.B) { benchColdOpen(b, mgFixture(b, "migrations")) })
	b.Run("heavy", func(b *testing.B) {
		dir := mgCopy(b, "migrations")
		files, err := filepath.Glob(filepath.Join(dir, "*.up.sql"))
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range files {
			body, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			extra := "CREATE TABLE IF NOT EXISTS bulk (n INTEGER NOT NULL, s TEXT NOT NULL);\n" +
				"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)\n" +
				"INSERT INTO bulk SELECT x, printf('row %d', x) FROM c;\n"
			if err := os.WriteFile(f, append(body, extra...), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		benchColdOpen(b, dir)
	})
}

func benchColdOpen(b *testing.B, src string) {
	measure := func(n int, migrated bool) time.Duration {
		path := filepath.Join(testdir.New(b), "bench.db")
		mgFresh(b, path)
		if migrated {
			mgRace(b, 1, mgDSN(path, src), "CLEOLEASE_FIRST=ping")
		}
		reports, start := mgRace(b, n, mgDSN(path, src), "CLEOLEASE_FIRST=ping")
		var last int64
		for _, r := range reports {
			f := strings.Fields(r)
			if len(f) != 3 || f[0] != "20" {
				b.Fatalf("report %q", r)
			}
			at, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			last = max(last, at)
		}
		return time.Duration(last - start.UnixNano())
	}
	var racing, alone, current time.Duration
	for b.Loop() {
		racing += measure(16, false)
		alone += measure(1, false)
		current += measure(16, true)
	}
	ms := func(d time.Duration) float64 { return float64(d/time.Duration(b.N)) / 1e6 }
	b.ReportMetric(ms(racing), "ms-16-racing")
	b.ReportMetric(ms(alone), "ms-alone")
	b.ReportMetric(ms(current), "ms-16-current")
	b.ReportMetric(float64(racing)/float64(alone), "x-ratio")
}
