package ncruces_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces"
	"github.com/cleocode/cleolease/ncruces/internal/base"
	"github.com/cleocode/cleolease/writer"
)

// roleEnv selects the role a re-executed test binary plays: "increment"
// opens CLEOLEASE_DB with cleolease-ncruces and increments its counter
// CLEOLEASE_N times, each in its own transaction, then prints "done";
// CLEOLEASE_DSN_QUERY, when set, is appended to its DSN ("?_lease_mode=…").
const roleEnv = "CLEOLEASE_NCRUCES_DRIVER_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "increment" {
		os.Exit(increment())
	}
	os.Exit(m.Run())
}

func increment() int {
	db, err := sql.Open(ncruces.DriverName, "file:"+os.Getenv("CLEOLEASE_DB")+os.Getenv("CLEOLEASE_DSN_QUERY"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	n, _ := strconv.Atoi(os.Getenv("CLEOLEASE_N"))
	for i := 0; i < n; i++ {
		if err := incrementOnce(context.Background(), db); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
	}
	fmt.Println("done")
	return 0
}

// incrementOnce reads the counter and writes it back plus one, logging
// the value written, in one transaction: with ncruces alone, processes or
// pools doing this at once fail with SQLITE_BUSY.
func incrementOnce(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "SELECT v FROM counter").Scan(&v); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE counter SET v = ?", v+1); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO log(v) VALUES (?)", v+1); err != nil {
		return err
	}
	return tx.Commit()
}

// checkCounter checks that the counter is want and the log holds want
// distinct values: no update lost.
func checkCounter(t *testing.T, db *sql.DB, want int) {
	t.Helper()
	var v, rows int
	if err := db.QueryRow("SELECT v FROM counter").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(DISTINCT v) FROM log").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if v != want || rows != want {
		t.Fatalf("counter %d, distinct log rows %d; want %d each (a lost update)", v, rows, want)
	}
}

const counterSchema = "CREATE TABLE counter(v INTEGER); INSERT INTO counter VALUES (0); CREATE TABLE log(v INTEGER)"

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(ncruces.DriverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The quick start: the driver name and an ncruces DSN; writes take the
// lease of their lane, state is package writer's, the defaults apply
// where the DSN sets nothing.
func TestQuickStart(t *testing.T) {
	if ncruces.DriverName != "cleolease-ncruces" {
		t.Fatalf("DriverName %q", ncruces.DriverName)
	}
	path := filepath.Join(testdir.New(t), "app.db")
	db := open(t, "file:"+path+"?_pragma=busy_timeout(5000)")
	ctx := writer.WithLane(context.Background(), "jobs", "ingest")
	if _, err := db.ExecContext(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO t(name) VALUES (?), (?)", "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t WHERE name IN (?, ?)", "a", "b").Scan(&n); err != nil || n != 2 {
		t.Fatalf("count = %d, %v", n, err)
	}
	st, err := writer.Stats(ctx, db)
	if err != nil || st.Grants == 0 {
		t.Fatalf("Stats = %+v, %v; want grants counted", st, err)
	}
	lanes, err := writer.Status(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range lanes {
		found = found || l.Scope == "jobs" && l.Lane == "ingest" && l.Epoch > 0
	}
	if !found {
		t.Fatalf("Status names no jobs/ingest lane: %+v", lanes)
	}
	for pragma, want := range map[string]string{"busy_timeout": "5000", "journal_mode": "wal", "synchronous": "1", "foreign_keys": "1"} {
		var got string
		if err := db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil || got != want {
			t.Errorf("PRAGMA %s = %q, %v; want %q (the DSN's, else cleolease's default)", pragma, got, err, want)
		}
	}
	// The application's connection gives ncruces's handle.
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		nc, ok := dc.(ncruces.Conn)
		if !ok || nc.Raw() == nil || nc.NcrucesConn().Raw() != nc.Raw() {
			return fmt.Errorf("%T gives no ncruces handle", dc)
		}
		if !nc.Raw().GetAutocommit() {
			return errors.New("a transaction is open")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Two *sql.DB on one file in one process, each with several connections,
// write at once under one lane: the lease serves their read-modify-write
// transactions in turn (no SQLITE_BUSY, no lost update).
func TestTwoPoolsWriteConcurrently(t *testing.T) {
	path := filepath.Join(testdir.New(t), "pools.db")
	a := open(t, "file:"+path)
	b := open(t, "file:"+path+"?_pragma=busy_timeout(1000)")
	if _, err := a.Exec(counterSchema); err != nil {
		t.Fatal(err)
	}
	ctx := writer.WithLane(context.Background(), "app", "counter")
	const goroutines, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	for _, db := range []*sql.DB{a, b} {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if err := incrementOnce(ctx, db); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkCounter(t, a, 2*goroutines*each)
	// The two pools share the file's engine.
	sa, err := writer.Stats(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := writer.Stats(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if sa.Grants < 2*goroutines*each || sa != sb {
		t.Fatalf("stats %+v and %+v; want one engine's, at least %d grants", sa, sb, 2*goroutines*each)
	}
}

// SQLite's errors come back as ncruces returns them: a *sqlite3.Error with
// its codes, or the bare code ncruces returns when SQLite says nothing
// more (both match errors.As to a sqlite3.ErrorCode).
func TestErrorsAreNcruces(t *testing.T) {
	p := filepath.Join(testdir.New(t), "e.db")
	db := open(t, "file:"+p)
	if _, err := db.Exec("CREATE TABLE t(name TEXT UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO t VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	for _, insert := range []func() error{
		func() error { _, err := db.Exec("INSERT INTO t VALUES ('a')"); return err },
		func() error { _, err := db.Exec("INSERT INTO t VALUES (?)", "a"); return err },
	} {
		err := insert()
		var se *sqlite3.Error
		if !errors.As(err, &se) || se.Code() != sqlite3.CONSTRAINT || se.ExtendedCode() != sqlite3.CONSTRAINT_UNIQUE {
			t.Fatalf("duplicate insert: %v (%T), want ncruces's *sqlite3.Error with SQLITE_CONSTRAINT_UNIQUE", err, err)
		}
		if !errors.Is(err, sqlite3.CONSTRAINT_UNIQUE) {
			t.Errorf("errors.Is(%v, CONSTRAINT_UNIQUE) = false", err)
		}
	}
	_, err := db.Exec("SELEC 1")
	var se *sqlite3.Error
	if !errors.As(err, &se) || se.Code() != sqlite3.ERROR {
		t.Fatalf("syntax error: %v (%T), want ncruces's *sqlite3.Error", err, err)
	}
	// A read-only file's refused write.
	ro := open(t, "file:"+p+"?mode=ro")
	_, err = ro.Exec("INSERT INTO t VALUES ('b')")
	var code sqlite3.ErrorCode
	if !errors.As(err, &code) || code != sqlite3.READONLY {
		t.Fatalf("write on a mode=ro file: %v (%T), want ncruces's SQLITE_READONLY", err, err)
	}
}

// A mistyped parameter, cleolease's or ncruces's, or a parameter of a
// plain file name (which ncruces would take as part of the name), is a
// *writer.DSNError naming it, at sql.Open.
func TestDSNTyposAreTyped(t *testing.T) {
	for _, tc := range []struct{ dsn, param string }{
		{"file:x.db?_lease_bogus=1", "_lease_bogus"},
		{"file:x.db?_pragmas=busy_timeout(5000)", "_pragmas"},
		{"file:x.db?_txlok=immediate", "_txlok"},
		{"file:x.db?_busy_timeout=5000", "_busy_timeout"},
		{"file:x.db?_txlock=bogus", "_txlock"},
		{"file:x.db?_pragma=", "_pragma"},
		{"file:x.db?mode=RO", "mode"},
		{"x.db?_pragma=busy_timeout(5000)", "_pragma"},
	} {
		db, err := sql.Open(ncruces.DriverName, tc.dsn)
		if err == nil {
			db.Close()
		}
		var de *writer.DSNError
		if !errors.As(err, &de) || de.Param != tc.param {
			t.Errorf("sql.Open(%q): %v, want a *writer.DSNError naming %s", tc.dsn, err, tc.param)
		}
		if _, err := ncruces.ParseDSN(tc.dsn); !errors.As(err, &de) || de.Param != tc.param {
			t.Errorf("ParseDSN(%q): %v, want a *writer.DSNError naming %s", tc.dsn, err, tc.param)
		}
	}
	cfg, err := ncruces.ParseDSN("file:x.db?_lease_mode=off&_pragma=busy_timeout(5000)&_txlock=deferred")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SQLiteDSN != "file:x.db?_pragma=busy_timeout(5000)&_txlock=deferred" || cfg.BaseDriver != nil {
		t.Errorf("ParseDSN: SQLiteDSN %q, BaseDriver %v", cfg.SQLiteDSN, cfg.BaseDriver)
	}
}

// The Init and Term callbacks passed to ncruces.Open run on the
// application's connections, each once, and never on the lease engine's
// own connection, which opens on the first connection.
func TestCallbacksRunOnTheApplicationsConnectionsOnly(t *testing.T) {
	path := filepath.Join(testdir.New(t), "cb.db")
	var inits, terms atomic.Int64
	var mu sync.Mutex
	handles := map[*sqlite3.Conn]bool{}
	db, err := ncruces.Open("file:"+path,
		func(c *sqlite3.Conn) error {
			inits.Add(1)
			mu.Lock()
			handles[c] = true
			mu.Unlock()
			return nil
		},
		func(c *sqlite3.Conn) error { terms.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, counterSchema); err != nil {
		t.Fatal(err)
	}
	// Three connections held at once.
	var conns []*sql.Conn
	for range 3 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if err := c.Raw(func(dc any) error {
			mu.Lock()
			defer mu.Unlock()
			if !handles[dc.(ncruces.Conn).Raw()] {
				return errors.New("Init did not run on this connection's handle")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "UPDATE counter SET v = v + 1"); err != nil {
			t.Fatal(err)
		}
	}
	opened := db.Stats().OpenConnections
	if got := inits.Load(); got != int64(opened) || opened != 3 {
		t.Fatalf("Init ran %d times for the %d connections the application opened, want 3 each (the engine's connection runs none)", got, opened)
	}
	if st, err := writer.Stats(ctx, db); err != nil || st.Grants == 0 {
		t.Fatalf("Stats = %+v, %v: the writes took no lease (no engine)", st, err)
	}
	for _, c := range conns {
		c.Close()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if terms.Load() != inits.Load() {
		t.Fatalf("Term ran %d times for %d connections", terms.Load(), inits.Load())
	}

	// Init's error fails the application's connection, as it returned it.
	refused := errors.New("refused by Init")
	db2, err := ncruces.Open("file:"+path, func(*sqlite3.Conn) error { return refused })
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if err := db2.Ping(); !errors.Is(err, refused) {
		t.Fatalf("Ping with a refusing Init: %v", err)
	}
	// More than two callbacks: ncruces's MISUSE.
	nop := func(*sqlite3.Conn) error { return nil }
	if _, err := ncruces.Open("file:"+path, nop, nop, nop); !errors.Is(err, sqlite3.MISUSE) {
		t.Fatalf("Open with three callbacks: %v, want sqlite3.MISUSE", err)
	}
}

// migrations are two golang-migrate migrations: a users table and its
// first row.
var migrations = fstest.MapFS{
	"1_users.up.sql":   {Data: []byte("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)")},
	"1_users.down.sql": {Data: []byte("DROP TABLE users")},
	"2_seed.up.sql":    {Data: []byte("INSERT INTO users(name) VALUES ('root')")},
	"2_seed.down.sql":  {Data: []byte("DELETE FROM users")},
}

// Cold-open migrations run over ncruces, once, before the first
// connection is returned; on a database only one connection sees (in
// memory: ncruces's SQLite has no shared cache, so cache=shared shares
// nothing) they are refused.
func TestColdOpenMigrations(t *testing.T) {
	dir := testdir.New(t)
	cfg := ncruces.NewConfig()
	cfg.SQLiteDSN = "file:" + filepath.Join(dir, "m.db")
	cfg.MigrationsFS = migrations
	for range 2 {
		db, err := ncruces.OpenDB(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var n, version int
		if err := db.QueryRow("SELECT count(*) FROM users").Scan(&n); err != nil || n != 1 {
			t.Fatalf("users after the cold open: %d, %v", n, err)
		}
		if err := db.QueryRow("SELECT version FROM schema_migrations").Scan(&version); err != nil || version != 2 {
			t.Fatalf("version %d, %v; want 2", version, err)
		}
		db.Close()
	}

	ncruces.RegisterMigrations("ncruces-test-users", migrations)
	db := open(t, "file:"+filepath.Join(dir, "r.db")+"?_migrations=ncruces-test-users")
	var n int
	if err := db.QueryRow("SELECT count(*) FROM users").Scan(&n); err != nil || n != 1 {
		t.Fatalf("users after the cold open of a registered source: %d, %v", n, err)
	}

	for _, dsn := range []string{":memory:", "file::memory:?cache=shared", "file:m?mode=memory&cache=shared", ""} {
		cfg := ncruces.NewConfig()
		cfg.SQLiteDSN = dsn
		cfg.MigrationsFS = migrations
		if _, err := ncruces.OpenDB(cfg); !errors.Is(err, writer.ErrPrivateMemory) {
			t.Errorf("migrations on %q: %v, want writer.ErrPrivateMemory", dsn, err)
		}
	}
	// Such a database opens, without a lease, as with ncruces alone: each
	// connection its own.
	mem := open(t, "file::memory:?cache=shared")
	mem.SetMaxOpenConns(2)
	c1, err := mem.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, err := c1.ExecContext(context.Background(), "CREATE TABLE only_here(x)"); err != nil {
		t.Fatal(err)
	}
	c2, err := mem.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.QueryRowContext(context.Background(), "SELECT count(*) FROM sqlite_schema WHERE name = 'only_here'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a second connection to file::memory:?cache=shared sees %d tables of the first, %v; ncruces shares nothing", n, err)
	}
}

// Processes writing one file through cleolease-ncruces take the lease in
// turn: no lost update, no "database is locked".
func TestProcessesShareTheLease(t *testing.T) {
	if base.For(nil).Locking() == sqlbase.LockingDotlk {
		t.Skip("sqlite3_dotlk: ncruces shares a WAL index within one process only")
	}
	path := filepath.Join(testdir.New(t), "c.db")
	db := open(t, "file:"+path)
	if _, err := db.Exec(counterSchema); err != nil {
		t.Fatal(err)
	}
	const procs, each = 3, 40
	var kids []*proctest.Child
	for i := 0; i < procs; i++ {
		kids = append(kids, proctest.Start(t, roleEnv+"=increment", "CLEOLEASE_DB="+path, "CLEOLEASE_N="+strconv.Itoa(each), proctest.GoraceNoExitSleep()))
	}
	for _, k := range kids {
		if got := k.Expect(""); got != "done" {
			t.Fatalf("child: %q", got)
		}
	}
	checkCounter(t, db, procs*each)
}
