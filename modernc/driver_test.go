package modernc_test

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

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/modernc"
	"github.com/cleocode/cleolease/writer"
)

// roleEnv selects the role a re-executed test binary plays: "increment"
// opens CLEOLEASE_DB with cleolease-modernc and increments its counter
// CLEOLEASE_N times, each in its own transaction, then prints "done";
// CLEOLEASE_DSN_QUERY, when set, is appended to its DSN ("?_lease_mode=…").
const roleEnv = "CLEOLEASE_MODERNC_DRIVER_ROLE"

// hooked counts the connections modernc's package-level connection hook
// ran on (the application's), by DSN. The hook is process-global: it is
// registered once, before anything opens.
var hooked sync.Map // DSN → *atomic.Int64

func TestMain(m *testing.M) {
	sqlite.RegisterConnectionHook(func(_ sqlite.ExecQuerierContext, dsn string) error {
		v, _ := hooked.LoadOrStore(dsn, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		return nil
	})
	if os.Getenv(roleEnv) == "increment" {
		os.Exit(increment())
	}
	os.Exit(m.Run())
}

func increment() int {
	db, err := sql.Open("cleolease-modernc", "file:"+os.Getenv("CLEOLEASE_DB")+os.Getenv("CLEOLEASE_DSN_QUERY"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	n, _ := strconv.Atoi(os.Getenv("CLEOLEASE_N"))
	ctx := context.Background()
	for i := 0; i < n; i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		var v int
		if err := tx.QueryRow("SELECT v FROM counter").Scan(&v); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		if _, err := tx.Exec("UPDATE counter SET v = ?", v+1); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		if _, err := tx.Exec("INSERT INTO log(v) VALUES (?)", v+1); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		if err := tx.Commit(); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
	}
	fmt.Println("done")
	return 0
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("cleolease-modernc", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The quick start: the driver name and a modernc DSN; writes take the
// lease of their lane, state is package writer's, the defaults apply.
func TestQuickStart(t *testing.T) {
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
	if _, err := tx.Exec("INSERT INTO t(name) VALUES ('a'), ('b')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
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
}

// SQLite's errors come back as modernc returns them.
func TestErrorsAreModerncs(t *testing.T) {
	db := open(t, "file:"+filepath.Join(testdir.New(t), "e.db"))
	if _, err := db.Exec("CREATE TABLE t(name TEXT UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO t VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec("INSERT INTO t VALUES ('a')")
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code() != sqlite3.SQLITE_CONSTRAINT_UNIQUE {
		t.Fatalf("duplicate insert: %v (%T), want modernc's *sqlite.Error with SQLITE_CONSTRAINT_UNIQUE", err, err)
	}
	if _, err := db.Exec("SELEC 1"); !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_ERROR {
		t.Fatalf("syntax error: %v (%T), want modernc's *sqlite.Error", err, err)
	}
}

// A mistyped parameter, cleolease's or modernc's, is a *writer.DSNError
// naming it, at sql.Open.
func TestDSNTyposAreTyped(t *testing.T) {
	for _, tc := range []struct{ dsn, param string }{
		{"file:x.db?_lease_bogus=1", "_lease_bogus"},
		{"file:x.db?_busytimeout=5000", "_busytimeout"},
		{"file:x.db?_pragma_x=1", "_pragma_x"},
	} {
		db, err := sql.Open("cleolease-modernc", tc.dsn)
		if err == nil {
			db.Close()
		}
		var de *writer.DSNError
		if !errors.As(err, &de) || de.Param != tc.param {
			t.Errorf("sql.Open(%q): %v, want a *writer.DSNError naming %s", tc.dsn, err, tc.param)
		}
	}
}

// The application's connections run modernc's package-level connection
// hooks (they come from the registered "sqlite" driver); the lease
// engine's connection runs none.
func TestHooksRunOnTheApplicationsConnectionsOnly(t *testing.T) {
	path := filepath.Join(testdir.New(t), "h.db")
	db := open(t, "file:"+path)
	db.SetMaxOpenConns(1)
	for i := 0; i < 3; i++ {
		if _, err := db.Exec("CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(0)
	hooked.Range(func(k, v any) bool {
		if dsn := k.(string); len(dsn) >= len(path) && filepath.Base(dsn[:len("file:")+len(path)]) == "h.db" {
			total += v.(*atomic.Int64).Load()
		}
		return true
	})
	if total != 1 {
		t.Fatalf("the connection hook ran on %d connections of h.db, want 1 (the application's one; the engine's runs none)", total)
	}
}

// Cold-open migrations run over modernc, once.
func TestColdOpenMigrations(t *testing.T) {
	cfg := modernc.NewConfig()
	cfg.SQLiteDSN = "file:" + filepath.Join(testdir.New(t), "m.db")
	cfg.MigrationsFS = fstest.MapFS{
		"1_users.up.sql":   {Data: []byte("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)")},
		"1_users.down.sql": {Data: []byte("DROP TABLE users")},
		"2_seed.up.sql":    {Data: []byte("INSERT INTO users(name) VALUES ('root')")},
		"2_seed.down.sql":  {Data: []byte("DELETE FROM users")},
	}
	db, err := modernc.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, version int
	if err := db.QueryRow("SELECT count(*) FROM users").Scan(&n); err != nil || n != 1 {
		t.Fatalf("users after the cold open: %d, %v", n, err)
	}
	if err := db.QueryRow("SELECT version FROM schema_migrations").Scan(&version); err != nil || version != 2 {
		t.Fatalf("version %d, %v; want 2", version, err)
	}
}

// Processes writing one file through cleolease-modernc take the lease in
// turn: no lost update, no "database is locked".
func TestProcessesShareTheLease(t *testing.T) {
	path := filepath.Join(testdir.New(t), "c.db")
	db := open(t, "file:"+path)
	if _, err := db.Exec("CREATE TABLE counter(v INTEGER); INSERT INTO counter VALUES (0); CREATE TABLE log(v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	const procs, each = 3, 40
	var kids []*proctest.Child
	for i := 0; i < procs; i++ {
		kids = append(kids, proctest.Start(t, roleEnv+"=increment", "CLEOLEASE_DB="+path, "CLEOLEASE_N="+strconv.Itoa(each)))
	}
	for _, k := range kids {
		if got := k.Expect(""); got != "done" {
			t.Fatalf("child: %q", got)
		}
	}
	var v, rows int
	if err := db.QueryRow("SELECT v FROM counter").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(DISTINCT v) FROM log").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if v != procs*each || rows != procs*each {
		t.Fatalf("counter %d, distinct log rows %d; want %d each (a lost update)", v, rows, procs*each)
	}
}
