package cleolease_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// Helpers of this file are prefixed dt so that they cannot collide with
// those of the package's other test files.

// dtPath returns the path of a database file (not yet created) in a fresh
// temporary directory.
func dtPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(testdir.New(t), "dt.db")
}

// dtOpen opens dsn with the cleolease driver; the DB is closed at the end
// of the test.
func dtOpen(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatalf("sql.Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// dtConn takes a connection out of db's pool; it goes back at the end of
// the test (before the DB closes, cleanups being LIFO).
func dtConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("db.Conn: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dtRaw opens path with plain go-sqlite3 (not through cleolease), to set up
// files and to observe what the driver did from a second connection.
func dtRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type dtExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type dtQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func dtExec(t *testing.T, e dtExecer, query string, args ...any) sql.Result {
	t.Helper()
	res, err := e.ExecContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return res
}

func dtInt(t *testing.T, q dtQueryer, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := q.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func dtString(t *testing.T, q dtQueryer, query string, args ...any) string {
	t.Helper()
	var s string
	if err := q.QueryRowContext(context.Background(), query, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s
}

// dtLeaseRow is an active row of _writer_leases.
type dtLeaseRow struct {
	Scope, Lane string
	PID         int64
}

// dtActiveLeases reads the active rows of _writer_leases from a separate
// plain go-sqlite3 connection.
func dtActiveLeases(t *testing.T, path string) []dtLeaseRow {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return dtLeaseRows(t, db)
}

// dtLeaseRows reads the active lease rows through q (a pool, or a
// transaction, which also sees its own uncommitted rows).
func dtLeaseRows(t *testing.T, q interface {
	Query(string, ...any) (*sql.Rows, error)
}) []dtLeaseRow {
	t.Helper()
	rows, err := q.Query(`SELECT scope, lane, holder_pid FROM _writer_leases WHERE active = 1 ORDER BY scope, lane`)
	if err != nil {
		t.Fatalf("reading _writer_leases: %v", err)
	}
	defer rows.Close()
	var out []dtLeaseRow
	for rows.Next() {
		var r dtLeaseRow
		if err := rows.Scan(&r.Scope, &r.Lane, &r.PID); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dtWantHolder checks that the only active lease row is (scope, lane) held
// by this process.
func dtWantHolder(t *testing.T, path, scope, lane string) {
	t.Helper()
	got := dtActiveLeases(t, path)
	want := []dtLeaseRow{{scope, lane, int64(os.Getpid())}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("active leases = %+v, want %+v", got, want)
	}
}

// dtWantHolderIn is dtWantHolder read through tx, inside the write
// transaction: a write whose lane was free claims it inside its own
// transaction (lease.InlineConfirmer), where the claim is seen before
// anyone else sees it, at its COMMIT.
func dtWantHolderIn(t *testing.T, tx *sql.Tx, scope, lane string) {
	t.Helper()
	got := dtLeaseRows(t, tx)
	if want := []dtLeaseRow{{scope, lane, int64(os.Getpid())}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("active leases seen inside the transaction = %+v, want %+v", got, want)
	}
}

// dtWantNoHolder checks that no lease row is active.
func dtWantNoHolder(t *testing.T, path string) {
	t.Helper()
	if got := dtActiveLeases(t, path); len(got) != 0 {
		t.Fatalf("active leases = %+v, want none", got)
	}
}

// dtHasTable reports whether the file at path has a table called name,
// read with plain go-sqlite3.
func dtHasTable(t *testing.T, path, name string) bool {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return dtInt(t, db, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name) > 0
}

// dtGrants returns how many lease grants db's engine has made.
func dtGrants(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	s, err := cleolease.Stats(context.Background(), db)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s.Grants
}

// dtRawConn runs f on the driver connection behind c.
func dtRawConn(t *testing.T, c *sql.Conn, f func(dc driver.Conn)) {
	t.Helper()
	if err := c.Raw(func(dc any) error {
		f(dc.(driver.Conn))
		return nil
	}); err != nil {
		t.Fatalf("Raw: %v", err)
	}
}

// dtSQLiteErr returns err as an unchanged sqlite3.Error: database/sql
// returns the driver's error as is, so the driver must not wrap SQLite's
// errors (older GORM translators JSON-marshal the value).
func dtSQLiteErr(t *testing.T, err error) sqlite3.Error {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want an SQLite error")
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a sqlite3.Error", err, err)
	}
	if _, ok := err.(sqlite3.Error); !ok {
		t.Errorf("SQLite error came back wrapped as %T: %v", err, err)
	}
	return se
}

// dtCreatePlainFile creates t(id INTEGER PRIMARY KEY, v TEXT) holding two
// rows in a fresh file with plain go-sqlite3 and returns its path.
func dtCreatePlainFile(t *testing.T) string {
	t.Helper()
	path := dtPath(t)
	raw := dtRaw(t, path)
	dtExec(t, raw, `CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)`)
	dtExec(t, raw, `INSERT INTO t(v) VALUES ('one'), ('two')`)
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// dtPragmas are the per-connection settings read back by the pragma tests.
type dtPragmas struct {
	JournalMode string
	BusyTimeout int64
	ForeignKeys int64
	Synchronous int64
}

// dtCheckEveryConn holds four pooled connections at once, makes a leased
// write on each (so the driver's own statements have run on it) and checks
// each connection's settings.
func dtCheckEveryConn(t *testing.T, db *sql.DB, want dtPragmas) {
	t.Helper()
	ctx := context.Background()
	db.SetMaxOpenConns(4)
	dtExec(t, db, `CREATE TABLE IF NOT EXISTS pragma_probe(n INTEGER)`)
	conns := make([]*sql.Conn, 4)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
		defer c.Close()
		conns[i] = c
	}
	for i, c := range conns {
		dtExec(t, c, `INSERT INTO pragma_probe VALUES (?)`, i)
		got := dtPragmas{
			JournalMode: strings.ToLower(dtString(t, c, `PRAGMA journal_mode`)),
			BusyTimeout: dtInt(t, c, `PRAGMA busy_timeout`),
			ForeignKeys: dtInt(t, c, `PRAGMA foreign_keys`),
			Synchronous: dtInt(t, c, `PRAGMA synchronous`),
		}
		if got != want {
			t.Errorf("conn %d: pragmas %+v, want %+v", i, got, want)
		}
	}
	if n := dtInt(t, conns[0], `SELECT count(*) FROM pragma_probe`); n != 4 {
		t.Errorf("pragma_probe has %d rows, want 4", n)
	}
}

func TestDriverOpenCRUDAndDefaultPragmas(t *testing.T) {
	path := dtPath(t)
	db := dtOpen(t, "file:"+path)
	dtExec(t, db, `CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL)`)
	dtExec(t, db, `INSERT INTO items(name) VALUES (?), (?)`, "a", "b")
	if got := dtString(t, db, `SELECT group_concat(name, ',') FROM (SELECT name FROM items ORDER BY id)`); got != "a,b" {
		t.Fatalf("SELECT = %q, want a,b", got)
	}
	// Defaults: WAL, 30 s busy timeout, foreign keys on, synchronous NORMAL.
	dtCheckEveryConn(t, db, dtPragmas{"wal", 30000, 1, 1})
	// The data is in the file, for any other reader.
	if n := dtInt(t, dtRaw(t, path), `SELECT count(*) FROM items`); n != 2 {
		t.Fatalf("plain reader sees %d rows, want 2", n)
	}
}

func TestDriverDSNPragmasWin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dsn   func(path string) string
		wants dtPragmas
	}{
		{"file URI", func(p string) string {
			return "file:" + p + "?_busy_timeout=1234&_fk=0&_journal_mode=DELETE&_sync=FULL"
		}, dtPragmas{"delete", 1234, 0, 2}},
		{"plain path", func(p string) string {
			return p + "?_busy_timeout=1234&_fk=0&_journal_mode=DELETE&_sync=FULL"
		}, dtPragmas{"delete", 1234, 0, 2}},
		{"long aliases", func(p string) string {
			return "file:" + p + "?_timeout=4321&_foreign_keys=0&_journal=TRUNCATE&_synchronous=OFF"
		}, dtPragmas{"truncate", 4321, 0, 0}},
		{"one set, rest default", func(p string) string {
			return p + "?_busy_timeout=555"
		}, dtPragmas{"wal", 555, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := dtOpen(t, tc.dsn(dtPath(t)))
			dtCheckEveryConn(t, db, tc.wants)
		})
	}
}

func TestDriverOpenRejectsBadDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn        string
		wantParam  string
		wantValue  string
		wantInText []string
	}{
		{"file:x.db?_lease_bogus=1", "_lease_bogus", "", []string{"_lease_bogus"}},
		{"file:x.db?_lease_ttl=banana", "_lease_ttl", "banana", []string{"_lease_ttl", "banana"}},
		{"file:x.db?_busy_timout=5", "_busy_timout", "", []string{"_busy_timout"}},
		{"x.db?_migrationsx=1", "_migrationsx", "", []string{"_migrationsx"}},
		{"x.db?_lease_mode=sometimes", "_lease_mode", "sometimes", []string{"_lease_mode", "sometimes"}},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			db, err := sql.Open("cleolease", tc.dsn)
			if err == nil {
				db.Close()
				t.Fatalf("sql.Open(%q) succeeded; want the error at once", tc.dsn)
			}
			var de *cleolease.DSNError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DSNError", err, err)
			}
			if de.Param != tc.wantParam || de.Value != tc.wantValue {
				t.Errorf("DSNError{Param: %q, Value: %q}, want {%q, %q}", de.Param, de.Value, tc.wantParam, tc.wantValue)
			}
			for _, s := range tc.wantInText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}

	for _, dsn := range []string{":memory:?_migrations=app", "file::memory:?_migrations=app", "file:memdb1?mode=memory&_migrations=app", "file:x.db?mode=memory&_migrations=app"} {
		t.Run(dsn, func(t *testing.T) {
			db, err := sql.Open("cleolease", dsn)
			if err == nil {
				db.Close()
				t.Fatalf("sql.Open(%q) succeeded; want ErrPrivateMemory at once", dsn)
			}
			if !errors.Is(err, cleolease.ErrPrivateMemory) || !strings.Contains(err.Error(), "migrations") {
				t.Fatalf("error %v is not ErrPrivateMemory naming the migrations", err)
			}
		})
	}

	// sql.Open does no I/O, even for a DSN it rejects late in validation.
	path := dtPath(t)
	if _, err := sql.Open("cleolease", "file:"+path+"?_lease_wait=-1s"); err == nil {
		t.Fatal("negative _lease_wait accepted")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sql.Open with a bad DSN touched the file: %v", err)
	}
}

func TestDriverEmptyDSN(t *testing.T) {
	db, err := sql.Open("cleolease", "")
	if err != nil {
		t.Fatalf("sql.Open with an empty DSN: %v", err)
	}
	defer db.Close()
	if _, ok := db.Driver().(*cleolease.Driver); !ok {
		t.Fatalf("db.Driver() is %T, want *cleolease.Driver", db.Driver())
	}
	for i := 0; i < 2; i++ {
		if err := db.Ping(); err != nil {
			t.Fatalf("Ping #%d = %v, want nil (a private temporary database, as with go-sqlite3)", i+1, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestDriverSharedMemory runs its scenario in a child process (role
// dt-shared-memory), so that a crash of the driver on an in-memory database
// fails this test instead of killing the whole test binary.
func TestDriverSharedMemory(t *testing.T) {
	for _, dsn := range []string{
		"file::memory:?cache=shared",
		"file:memdb1?mode=memory&cache=shared",
	} {
		t.Run(dsn, func(t *testing.T) {
			c := startChild(t, "dt-shared-memory", dsn)
			if got := c.expect(""); got != "OK" {
				t.Fatalf("child: %s", got)
			}
		})
	}
}

func init() {
	roles["dt-shared-memory"] = func() int {
		if err := dtSharedMemoryScenario(os.Getenv("CLEOLEASE_DSN")); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		fmt.Println("OK")
		return 0
	}
}

// dtSharedMemoryScenario: CREATE / INSERT / SELECT across pooled
// connections of a shared in-memory database, and write transactions on a
// held connection and through the pool. It closes the DB before returning,
// so the engine's goroutines have finished by then.
func dtSharedMemoryScenario(dsn string) (err error) {
	ctx := context.Background()
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("db.Close: %w", cerr)
		}
	}()
	db.SetMaxOpenConns(3)
	c1, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c1.Close()
	c2, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c2.Close()
	count := func(c *sql.Conn, want int) error {
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
			return err
		}
		if n != want {
			return fmt.Errorf("count = %d, want %d", n, want)
		}
		return nil
	}
	if _, err := c1.ExecContext(ctx, `CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		return fmt.Errorf("CREATE: %w", err)
	}
	if _, err := c1.ExecContext(ctx, `INSERT INTO t(v) VALUES ('c1')`); err != nil {
		return fmt.Errorf("INSERT: %w", err)
	}
	var v string
	if err := c2.QueryRowContext(ctx, `SELECT v FROM t`).Scan(&v); err != nil || v != "c1" {
		return fmt.Errorf("second connection reads %q, %v; want c1", v, err)
	}
	tx, err := c2.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("BeginTx: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t(v) VALUES ('tx')`); err != nil {
		tx.Rollback()
		return fmt.Errorf("tx INSERT: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("Commit: %w", err)
	}
	if err := count(c1, 2); err != nil {
		return err
	}
	// Through the pool (a third connection).
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db.BeginTx: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t(v) VALUES ('pool')`); err != nil {
		tx.Rollback()
		return fmt.Errorf("pool tx INSERT: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("pool Commit: %w", err)
	}
	if err := count(c2, 3); err != nil {
		return err
	}
	// The lease is in-process only: no lease tables in the database.
	var n int
	if err := c1.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = '_writer_leases'`).Scan(&n); err != nil {
		return err
	}
	if n != 0 {
		return errors.New("shared in-memory database got a _writer_leases table")
	}
	return nil
}

func TestDriverIdentity(t *testing.T) {
	path := dtPath(t)
	db := dtOpen(t, "file:"+path)
	if _, ok := db.Driver().(*cleolease.Driver); !ok {
		t.Errorf("sql.Open: db.Driver() is %T, want *cleolease.Driver", db.Driver())
	}

	cfg := cleolease.NewConfig()
	cfg.SQLiteDSN = "file:" + path
	db2, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if _, ok := db2.Driver().(*cleolease.Driver); !ok {
		t.Errorf("OpenDB: db.Driver() is %T, want *cleolease.Driver", db2.Driver())
	}
	c, err := cleolease.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.Driver().(*cleolease.Driver); !ok {
		t.Errorf("Connector.Driver() is %T, want *cleolease.Driver", c.Driver())
	}
	// Both *sql.DB on the file work side by side.
	dtExec(t, db, `CREATE TABLE t(v)`)
	dtExec(t, db2, `INSERT INTO t VALUES (1)`)
	if n := dtInt(t, db, `SELECT count(*) FROM t`); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
}

func TestDriverConfigValidatedLikeDSN(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dsn   string
		edit  func(c *cleolease.Config)
		field string // the Config field the error names; "" for a *DSNError inside SQLiteDSN
	}{
		{"typo go-sqlite3 param", "x.db?_busy_timout=5", func(c *cleolease.Config) { c.SQLiteDSN = "x.db?_busy_timout=5" }, ""},
		{"non-positive ttl", "x.db?_lease_ttl=-1s", func(c *cleolease.Config) { c.TTL = -time.Second }, "TTL"},
		{"bad mode", "x.db?_lease_mode=sometimes", func(c *cleolease.Config) { c.Mode = "sometimes" }, "Mode"},
		{"empty scope", "x.db?_lease_scope=", func(c *cleolease.Config) { c.Scope = "" }, "Scope"},
		{"negative wait", "x.db?_lease_wait=-1s", func(c *cleolease.Config) { c.Wait = -time.Second }, "Wait"},
		{"bad migrations table", "x.db?_migrations_table=a-b", func(c *cleolease.Config) { c.MigrationsTable = "a-b" }, "MigrationsTable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dsnErr := sql.Open("cleolease", tc.dsn)
			var want *cleolease.DSNError
			if !errors.As(dsnErr, &want) {
				t.Fatalf("sql.Open(%q) = %v, want a *DSNError", tc.dsn, dsnErr)
			}
			cfg := cleolease.NewConfig()
			cfg.SQLiteDSN = "x.db"
			tc.edit(cfg)

			_, connErr := cleolease.NewConnector(cfg)
			db, openErr := cleolease.OpenDB(cfg)
			if db != nil {
				db.Close()
			}
			for name, err := range map[string]error{"NewConnector": connErr, "OpenDB": openErr} {
				if tc.field == "" {
					var got *cleolease.DSNError
					if !errors.As(err, &got) || *got != *want {
						t.Errorf("%s = %v, want the DSN's %#v", name, err, *want)
					}
					continue
				}
				var got *cleolease.ConfigError
				if !errors.As(err, &got) {
					t.Errorf("%s = %v, want a *ConfigError", name, err)
					continue
				}
				if got.Field != tc.field || got.Reason != want.Reason {
					t.Errorf("%s = %#v, want Field %q and the DSN's reason %q", name, *got, tc.field, want.Reason)
				}
			}
		})
	}

	t.Run("migrations on private memory", func(t *testing.T) {
		for name, edit := range map[string]func(c *cleolease.Config){
			"MigrationsFS": func(c *cleolease.Config) { c.MigrationsFS = os.DirFS(testdir.New(t)) },
			"Migrator":     func(c *cleolease.Config) { c.Migrator = cleolease.MigratorFunc(nil) },
		} {
			cfg := cleolease.NewConfig()
			cfg.SQLiteDSN = ":memory:"
			edit(cfg)
			if _, err := cleolease.NewConnector(cfg); !errors.Is(err, cleolease.ErrPrivateMemory) {
				t.Errorf("%s: NewConnector = %v, want ErrPrivateMemory", name, err)
			}
			if _, err := cleolease.OpenDB(cfg); !errors.Is(err, cleolease.ErrPrivateMemory) {
				t.Errorf("%s: OpenDB = %v, want ErrPrivateMemory", name, err)
			}
		}
	})

	t.Run("cleolease param inside SQLiteDSN", func(t *testing.T) {
		cfg := cleolease.NewConfig()
		cfg.SQLiteDSN = "x.db?_lease_ttl=1s"
		var de *cleolease.DSNError
		if _, err := cleolease.NewConnector(cfg); !errors.As(err, &de) || de.Param != "_lease_ttl" {
			t.Errorf("NewConnector = %v, want a *DSNError naming _lease_ttl", err)
		}
	})

	t.Run("valid config works", func(t *testing.T) {
		path := dtPath(t)
		cfg := cleolease.NewConfig()
		cfg.SQLiteDSN = "file:" + path
		cfg.Lane = "cfg_lane"
		cfg.Linger = 0
		db, err := cleolease.OpenDB(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dtExec(t, db, `CREATE TABLE t(v)`)
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		dtExec(t, tx, `INSERT INTO t VALUES (1)`)
		dtWantHolderIn(t, tx, cleolease.DefaultScope, "cfg_lane")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := strings.ToLower(dtString(t, db, `PRAGMA journal_mode`)); got != "wal" {
			t.Errorf("journal_mode = %q, want wal", got)
		}
	})
}

func TestDriverCloseReleasesConnector(t *testing.T) {
	path := dtPath(t)
	sidecar := path + "-cleolease"
	// A long linger: after the write this process keeps the lane's row,
	// so only Close can give it back.
	db, err := sql.Open("cleolease", "file:"+path+"?_lease_linger=1h")
	if err != nil {
		t.Fatal(err)
	}
	dtExec(t, db, `CREATE TABLE t(v)`)
	dtExec(t, db, `INSERT INTO t VALUES (1)`)
	dtWantHolder(t, path, cleolease.DefaultScope, cleolease.DefaultLane)
	if _, err := os.Stat(sidecar); err != nil {
		t.Fatalf("sidecar while open: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(sidecar); !errors.Is(err, os.ErrNotExist) && runtime.GOOS != "windows" {
		// (On Windows the sidecar stays: a file open elsewhere cannot be
		// removed, see removable in internal/platform.)
		t.Errorf("sidecar %s still there after db.Close (stat: %v)", sidecar, err)
	}
	dtWantNoHolder(t, path)

	// Another *sql.DB on the same file takes the lease, in mode require
	// (an error instead of a degraded grant if it could not).
	db2 := dtOpen(t, "file:"+path+"?_lease_mode=require&_lease_wait=10s&_lease_linger=0")
	tx, err := db2.Begin()
	if err != nil {
		t.Fatalf("second DB Begin: %v", err)
	}
	defer tx.Rollback()
	dtExec(t, tx, `INSERT INTO t VALUES (2)`)
	dtWantHolderIn(t, tx, cleolease.DefaultScope, cleolease.DefaultLane)
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := dtInt(t, db2, `SELECT count(*) FROM t`); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
}

func TestDriverRawSQLiteConn(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path)
	dtExec(t, db, `CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)`)
	dtExec(t, db, `INSERT INTO t(v) VALUES ('a'), ('b'), ('c')`)
	c := dtConn(t, db)

	var sc *sqlite3.SQLiteConn
	if err := c.Raw(func(dc any) error {
		cc, ok := dc.(cleolease.Conn)
		if !ok {
			return errors.New("Raw value does not implement cleolease.Conn")
		}
		sc = cc.SQLiteConn()
		if sc == nil {
			return errors.New("SQLiteConn() is nil")
		}
		return sc.RegisterFunc("dt_twice", func(x int64) int64 { return 2 * x }, true)
	}); err != nil {
		t.Fatal(err)
	}
	if got := dtInt(t, c, `SELECT dt_twice(21)`); got != 42 {
		t.Fatalf("dt_twice(21) = %d, want 42", got)
	}
	// Used in a leased write on the same connection too.
	dtExec(t, c, `UPDATE t SET id = dt_twice(id) + 100`)
	if got := dtInt(t, c, `SELECT sum(id) FROM t`); got != 312 {
		t.Fatalf("sum(id) = %d, want 312", got)
	}

	// Online backup to a second file with go-sqlite3's Backup API.
	dest := filepath.Join(testdir.New(t), "backup.db")
	dc, err := (&sqlite3.SQLiteDriver{}).Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	destConn := dc.(*sqlite3.SQLiteConn)
	defer destConn.Close()
	if err := c.Raw(func(any) error {
		bk, err := destConn.Backup("main", sc, "main")
		if err != nil {
			return err
		}
		done, err := bk.Step(-1)
		if err != nil {
			bk.Finish()
			return err
		}
		if !done {
			bk.Finish()
			return errors.New("backup Step(-1) not done")
		}
		return bk.Finish()
	}); err != nil {
		t.Fatalf("backup: %v", err)
	}
	if err := destConn.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dtString(t, dtRaw(t, dest), `SELECT group_concat(v, '') FROM (SELECT v FROM t ORDER BY id)`); got != "abc" {
		t.Fatalf("backup holds %q, want abc", got)
	}
	// The connection is still fine for the pool.
	if err := c.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// dtImplements checks through Raw that the driver connection implements
// the optional interface I.
func dtImplements[I any](t *testing.T, db *sql.DB) {
	t.Helper()
	c := dtConn(t, db)
	dtRawConn(t, c, func(dc driver.Conn) {
		if _, ok := dc.(I); !ok {
			t.Fatalf("driver connection %T does not implement %s", dc, reflect.TypeFor[I]())
		}
	})
	c.Close()
}

func TestDriverExecerContext(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path+"?_lease_linger=0")
	dtImplements[driver.ExecerContext](t, db)

	dtExec(t, db, `CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)`)
	g := dtGrants(t, db)
	res := dtExec(t, db, `INSERT INTO t(v) VALUES (?)`, "x")
	if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("RowsAffected = %d, want 1", n)
	}
	if id, _ := res.LastInsertId(); id != 1 {
		t.Errorf("LastInsertId = %d, want 1", id)
	}
	if got := dtGrants(t, db) - g; got != 1 {
		t.Errorf("a write through ExecContext made %d lease grants, want 1", got)
	}
	dtWantNoHolder(t, path) // released after the statement
	if n := dtInt(t, dtRaw(t, path), `SELECT count(*) FROM t`); n != 1 {
		t.Errorf("committed rows = %d, want 1", n)
	}

	// A read issued through Exec takes no lease.
	g = dtGrants(t, db)
	dtExec(t, db, `SELECT count(*) FROM t`)
	if got := dtGrants(t, db) - g; got != 0 {
		t.Errorf("a read through ExecContext made %d lease grants, want 0", got)
	}

	// Several statements in one string: leased, all applied.
	g = dtGrants(t, db)
	dtExec(t, db, `CREATE TABLE u(a); INSERT INTO u VALUES (1); INSERT INTO u VALUES (2)`)
	if got := dtGrants(t, db) - g; got != 1 {
		t.Errorf("a multi-statement write made %d lease grants, want 1", got)
	}
	if n := dtInt(t, db, `SELECT count(*) FROM u`); n != 2 {
		t.Errorf("u has %d rows, want 2", n)
	}

	// The wrapper is on the path: inside a transaction the driver did not
	// begin, a write is refused instead of running unleased.
	c := dtConn(t, db)
	dtExec(t, c, `BEGIN`)
	if _, err := c.ExecContext(ctx, `INSERT INTO t(v) VALUES ('foreign')`); !errors.Is(err, cleolease.ErrForeignTransaction) {
		t.Errorf("write inside a hand-written BEGIN = %v, want ErrForeignTransaction", err)
	}
	dtExec(t, c, `ROLLBACK`)
	dtExec(t, c, `INSERT INTO t(v) VALUES ('after')`)
	if n := dtInt(t, db, `SELECT count(*) FROM t`); n != 2 {
		t.Errorf("t has %d rows, want 2", n)
	}
}

func TestDriverQueryerContext(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path+"?_lease_linger=0")
	dtImplements[driver.QueryerContext](t, db)
	dtExec(t, db, `CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)`)
	dtExec(t, db, `INSERT INTO t(v) VALUES ('a')`)

	// A read takes no lease.
	g := dtGrants(t, db)
	if got := dtString(t, db, `SELECT v FROM t`); got != "a" {
		t.Fatalf("SELECT = %q", got)
	}
	if got := dtGrants(t, db) - g; got != 0 {
		t.Errorf("a read made %d lease grants, want 0", got)
	}

	// A write that returns rows is committed, and its lease released,
	// before Query returns; the rows come back buffered.
	c := dtConn(t, db)
	g = dtGrants(t, db)
	rows, err := c.QueryContext(ctx, `INSERT INTO t(v) VALUES ('b') RETURNING id, v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	dtWantNoHolder(t, path)
	if n := dtInt(t, dtRaw(t, path), `SELECT count(*) FROM t`); n != 2 {
		t.Errorf("rows committed before the rows are read = %d, want 2", n)
	}
	cts, err := rows.ColumnTypes()
	if err != nil || len(cts) != 2 {
		t.Fatalf("ColumnTypes = %v, %v", cts, err)
	}
	if !rows.Next() {
		t.Fatalf("RETURNING gave no row: %v", rows.Err())
	}
	var id int64
	var v string
	if err := rows.Scan(&id, &v); err != nil {
		t.Fatal(err)
	}
	if id != 2 || v != "b" {
		t.Errorf("RETURNING = (%d, %q), want (2, b)", id, v)
	}
	if err := rows.Close(); err != nil {
		t.Fatalf("rows.Close: %v", err)
	}
	dtWantNoHolder(t, path)
	if got := dtGrants(t, db) - g; got != 1 {
		t.Errorf("INSERT … RETURNING made %d lease grants, want 1", got)
	}
	if n := dtInt(t, dtRaw(t, path), `SELECT count(*) FROM t`); n != 2 {
		t.Errorf("committed rows = %d, want 2", n)
	}

	// Inside a hand-written BEGIN the write is refused, not run unleased.
	dtExec(t, c, `BEGIN`)
	if _, err := c.QueryContext(ctx, `INSERT INTO t(v) VALUES ('c') RETURNING id`); !errors.Is(err, cleolease.ErrForeignTransaction) {
		t.Errorf("INSERT … RETURNING inside a hand-written BEGIN = %v, want ErrForeignTransaction", err)
	}
	dtExec(t, c, `ROLLBACK`)
}

func TestDriverConnBeginTx(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path+"?_lease_linger=0")
	dtImplements[driver.ConnBeginTx](t, db)
	dtExec(t, db, `CREATE TABLE t(v)`)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	dtWantHolderIn(t, tx, cleolease.DefaultScope, cleolease.DefaultLane)
	dtExec(t, tx, `INSERT INTO t VALUES (1)`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	dtWantNoHolder(t, path)

	// The context's lane wins over the DSN's.
	tx, err = db.BeginTx(cleolease.WithLane(ctx, "dt_scope", "dt_lane"), &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	dtWantHolder(t, path, "dt_scope", "dt_lane")
	dtExec(t, tx, `INSERT INTO t VALUES (2)`)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	dtWantNoHolder(t, path)

	// An isolation level SQLite does not have is an error, not a panic, and
	// takes no lease.
	g := dtGrants(t, db)
	if tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted}); err == nil {
		tx.Rollback()
		t.Fatal("BeginTx(LevelReadCommitted) succeeded")
	}
	if got := dtGrants(t, db) - g; got != 0 {
		t.Errorf("refused BeginTx made %d grants", got)
	}
	dtWantNoHolder(t, path)
	if n := dtInt(t, db, `SELECT count(*) FROM t`); n != 1 {
		t.Errorf("t has %d rows, want 1", n)
	}
}

func TestDriverPinger(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path)
	dtImplements[driver.Pinger](t, db)
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	c := dtConn(t, db)
	if err := c.PingContext(ctx); err != nil {
		t.Fatalf("Conn.Ping: %v", err)
	}

	// The ping goes through the driver: once another file is renamed over
	// the path, it reports ErrFileChanged.
	other := filepath.Join(filepath.Dir(path), "other.db")
	raw := dtRaw(t, other)
	dtExec(t, raw, `CREATE TABLE x(a)`)
	raw.Close()
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses to replace a database SQLite holds open (no FILE_SHARE_DELETE): see lease's TestOpenDatabaseCannotBeReplacedOnWindows")
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if err := c.PingContext(ctx); !errors.Is(err, cleolease.ErrFileChanged) {
		t.Errorf("Conn.Ping after the file was replaced = %v, want ErrFileChanged", err)
	}
	dtRawConn(t, c, func(dc driver.Conn) {
		if err := dc.(driver.Pinger).Ping(ctx); !errors.Is(err, cleolease.ErrFileChanged) {
			t.Errorf("driver Ping after the file was replaced = %v, want ErrFileChanged", err)
		}
	})
}

func TestDriverSessionResetter(t *testing.T) {
	for _, tc := range []struct {
		name, query string
	}{
		{"leased", ""},
		{"mode off", "?_lease_mode=off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := dtPath(t)
			db := dtOpen(t, "file:"+path+tc.query)
			dtImplements[driver.SessionResetter](t, db)
			db.SetMaxOpenConns(1)
			dtExec(t, db, `CREATE TABLE t(v)`)

			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dtExec(t, c, `BEGIN`)
			if tc.query == "" {
				// Leased: the driver refuses the write, so write through
				// the native connection.
				if _, err := c.ExecContext(ctx, `INSERT INTO t VALUES ('left open')`); !errors.Is(err, cleolease.ErrForeignTransaction) {
					t.Fatalf("write inside BEGIN = %v, want ErrForeignTransaction", err)
				}
				if err := c.Raw(func(dc any) error {
					_, err := dc.(cleolease.Conn).SQLiteConn().Exec(`INSERT INTO t VALUES ('left open')`, nil)
					return err
				}); err != nil {
					t.Fatal(err)
				}
			} else {
				dtExec(t, c, `INSERT INTO t VALUES ('left open')`)
			}
			if n := dtInt(t, c, `SELECT count(*) FROM t`); n != 1 {
				t.Fatalf("inside the transaction: %d rows, want 1", n)
			}
			c.Close() // back to the pool, transaction still open

			// The next user of the (single-connection) pool is not inside
			// that transaction, and its data was not committed.
			c2 := dtConn(t, db)
			dtRawConn(t, c2, func(dc driver.Conn) {
				if !dc.(cleolease.Conn).SQLiteConn().AutoCommit() {
					t.Error("next user of the pool is inside the abandoned transaction")
				}
			})
			if n := dtInt(t, c2, `SELECT count(*) FROM t`); n != 0 {
				t.Errorf("abandoned transaction's row visible to the next user (%d rows)", n)
			}
			dtExec(t, c2, `INSERT INTO t VALUES ('next')`)
			c2.Close()
			if n := dtInt(t, dtRaw(t, path), `SELECT count(*) FROM t`); n != 1 {
				t.Errorf("committed rows = %d, want 1 (only the next user's)", n)
			}
		})
	}
}

func TestDriverValidator(t *testing.T) {
	ctx := context.Background()
	testdir.LeaveOpen(t, "a connection's native handle is closed under statements it still has, so SQLite keeps the files open (sqlite3_close_v2)")
	path := dtPath(t)
	db := dtOpen(t, "file:"+path)
	dtImplements[driver.Validator](t, db)
	db.SetMaxOpenConns(1)

	c := dtConn(t, db)
	dtRawConn(t, c, func(dc driver.Conn) {
		if !dc.(driver.Validator).IsValid() {
			t.Error("a fresh connection reports IsValid() == false")
		}
	})
	// Connection-local state: a temp table survives a trip through the
	// pool, so a healthy connection is kept and reused.
	dtExec(t, c, `CREATE TEMP TABLE dt_local(a)`)
	dtExec(t, c, `CREATE TABLE t(v)`)
	dtExec(t, c, `INSERT INTO t VALUES (1)`)
	c.Close()
	c = dtConn(t, db)
	if n := dtInt(t, c, `SELECT count(*) FROM temp.sqlite_master WHERE name = 'dt_local'`); n != 1 {
		t.Fatal("the pooled connection was not reused (temp table gone)")
	}

	// A connection whose native handle was closed is dropped by the pool;
	// the next user gets a working one.
	if err := c.Raw(func(dc any) error {
		return dc.(cleolease.Conn).SQLiteConn().Close()
	}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = dtConn(t, db)
	if err := c.PingContext(ctx); err != nil {
		t.Fatalf("Ping after a broken connection was returned: %v", err)
	}
	dtExec(t, c, `INSERT INTO t VALUES (2)`)
	if n := dtInt(t, c, `SELECT count(*) FROM temp.sqlite_master WHERE name = 'dt_local'`); n != 0 {
		t.Error("the broken connection was handed out again")
	}
	if n := dtInt(t, c, `SELECT count(*) FROM t`); n != 2 {
		t.Errorf("t has %d rows, want 2", n)
	}
}

type dtKind int32

type dtValuer struct{ s string }

func (v dtValuer) Value() (driver.Value, error) { return "valuer:" + v.s, nil }

func TestDriverNamedValueChecker(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path)
	dtImplements[driver.NamedValueChecker](t, db)
	dtExec(t, db, `CREATE TABLE t(k INTEGER, s TEXT, b BLOB, f REAL, ok INTEGER, n, at TIMESTAMP)`)

	at := time.Date(2024, 2, 29, 13, 14, 15, 0, time.UTC)
	g := dtGrants(t, db)
	dtExec(t, db, `INSERT INTO t VALUES (:k, @s, $b, :f, :ok, :n, :at)`,
		sql.Named("k", dtKind(7)), sql.Named("s", dtValuer{"x"}), sql.Named("b", []byte{1, 2}),
		sql.Named("f", float32(1.5)), sql.Named("ok", true), sql.Named("n", nil), sql.Named("at", at))
	if got := dtGrants(t, db) - g; got != 1 {
		t.Errorf("a write with named arguments made %d grants, want 1", got)
	}
	var (
		k  int64
		s  string
		b  []byte
		f  float64
		ok bool
		n  sql.NullString
		tm time.Time
	)
	if err := db.QueryRowContext(ctx, `SELECT k, s, b, f, ok, n, at FROM t WHERE k = ?`, dtKind(7)).Scan(&k, &s, &b, &f, &ok, &n, &tm); err != nil {
		t.Fatal(err)
	}
	if k != 7 || s != "valuer:x" || string(b) != "\x01\x02" || f != 1.5 || !ok || n.Valid || !tm.Equal(at) {
		t.Errorf("read back (%d, %q, %v, %v, %v, %v, %v)", k, s, b, f, ok, n, tm)
	}

	// Values the converter rejects are errors before anything runs.
	g = dtGrants(t, db)
	for _, bad := range []any{struct{ X int }{1}, uint64(1 << 63), make(chan int)} {
		if _, err := db.ExecContext(ctx, `INSERT INTO t(k) VALUES (?)`, bad); err == nil {
			t.Errorf("argument %T accepted", bad)
		}
	}
	if got := dtGrants(t, db) - g; got != 0 {
		t.Errorf("rejected arguments made %d grants", got)
	}
	if c := dtInt(t, db, `SELECT count(*) FROM t`); c != 1 {
		t.Errorf("t has %d rows, want 1", c)
	}
	// Prepared statements use the same conversion.
	st, err := db.PrepareContext(ctx, `INSERT INTO t(k, s) VALUES (?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ExecContext(ctx, dtKind(8), dtValuer{"y"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx, struct{}{}, "z"); err == nil {
		t.Error("prepared statement accepted a struct argument")
	}
	if got := dtString(t, db, `SELECT s FROM t WHERE k = 8`); got != "valuer:y" {
		t.Errorf("prepared insert stored %q", got)
	}
}

func TestDriverNonContextPaths(t *testing.T) {
	path := dtPath(t)
	db := dtOpen(t, "file:"+path+"?_lease_linger=0")
	dtExec(t, db, `CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)`)
	c := dtConn(t, db)
	count := func() int64 { return dtInt(t, dtRaw(t, path), `SELECT count(*) FROM t`) }

	t.Run("Execer", func(t *testing.T) {
		g := dtGrants(t, db)
		dtRawConn(t, c, func(dc driver.Conn) {
			ex, ok := dc.(driver.Execer) //nolint:staticcheck // the deprecated path is the point
			if !ok {
				t.Fatalf("%T does not implement driver.Execer", dc)
			}
			res, err := ex.Exec(`INSERT INTO t(v) VALUES (?)`, []driver.Value{"exec"})
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Errorf("RowsAffected = %d", n)
			}
		})
		if got := dtGrants(t, db) - g; got != 1 {
			t.Errorf("Execer.Exec write made %d grants, want 1", got)
		}
		dtWantNoHolder(t, path)
		if n := count(); n != 1 {
			t.Errorf("committed rows = %d, want 1", n)
		}
	})

	t.Run("Queryer", func(t *testing.T) {
		g := dtGrants(t, db)
		dtRawConn(t, c, func(dc driver.Conn) {
			q, ok := dc.(driver.Queryer) //nolint:staticcheck
			if !ok {
				t.Fatalf("%T does not implement driver.Queryer", dc)
			}
			rows, err := q.Query(`INSERT INTO t(v) VALUES (?) RETURNING id`, []driver.Value{"query"})
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			dtWantNoHolder(t, path) // committed before Query returned
			dest := make([]driver.Value, 1)
			if err := rows.Next(dest); err != nil {
				t.Fatal(err)
			}
			if dest[0] != int64(2) {
				t.Errorf("RETURNING id = %v, want 2", dest[0])
			}
			if err := rows.Next(dest); err != io.EOF {
				t.Errorf("second Next = %v, want io.EOF", err)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			// A read through the same path takes no lease.
			rows, err = q.Query(`SELECT count(*) FROM t`, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
		})
		if got := dtGrants(t, db) - g; got != 1 {
			t.Errorf("Queryer.Query made %d grants, want 1", got)
		}
		dtWantNoHolder(t, path)
		if n := count(); n != 2 {
			t.Errorf("committed rows = %d, want 2", n)
		}
	})

	t.Run("Prepare", func(t *testing.T) {
		g := dtGrants(t, db)
		dtRawConn(t, c, func(dc driver.Conn) {
			st, err := dc.Prepare(`INSERT INTO t(v) VALUES (?)`)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Exec([]driver.Value{"stmt"}); err != nil { //nolint:staticcheck
				t.Fatal(err)
			}
			st2, err := dc.Prepare(`INSERT INTO t(v) VALUES (?) RETURNING v`)
			if err != nil {
				t.Fatal(err)
			}
			defer st2.Close()
			rows, err := st2.Query([]driver.Value{"stmt-query"}) //nolint:staticcheck
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			dtWantNoHolder(t, path) // committed before Query returned
			dest := make([]driver.Value, 1)
			if err := rows.Next(dest); err != nil {
				t.Fatal(err)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
		})
		if got := dtGrants(t, db) - g; got != 2 {
			t.Errorf("prepared Exec + Query made %d grants, want 2", got)
		}
		dtWantNoHolder(t, path)
		if n := count(); n != 4 {
			t.Errorf("committed rows = %d, want 4", n)
		}
	})

	t.Run("Begin", func(t *testing.T) {
		dtRawConn(t, c, func(dc driver.Conn) {
			tx, err := dc.Begin() //nolint:staticcheck
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			// The write transaction holds the lease while open (seen from
			// inside it: the lane was free, so it was claimed there).
			rows, err := dc.(driver.Queryer).Query(`SELECT holder_pid FROM _writer_leases WHERE active = 1`, nil) //nolint:staticcheck
			if err != nil {
				t.Fatal(err)
			}
			v := make([]driver.Value, 1)
			err = rows.Next(v)
			rows.Close()
			if pid, _ := v[0].(int64); err != nil || pid != int64(os.Getpid()) {
				t.Errorf("inside the transaction the active lease names pid %v (%v); want this process", v[0], err)
			}
			if _, err := dc.(driver.Execer).Exec(`INSERT INTO t(v) VALUES ('begin')`, nil); err != nil { //nolint:staticcheck
				tx.Rollback()
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		})
		dtWantNoHolder(t, path)
		if n := count(); n != 5 {
			t.Errorf("committed rows = %d, want 5", n)
		}
	})

	t.Run("foreign transaction", func(t *testing.T) {
		dtRawConn(t, c, func(dc driver.Conn) {
			sc := dc.(cleolease.Conn).SQLiteConn()
			if _, err := sc.Exec(`BEGIN`, nil); err != nil {
				t.Fatal(err)
			}
			defer sc.Exec(`ROLLBACK`, nil)
			if _, err := dc.(driver.Execer).Exec(`INSERT INTO t(v) VALUES ('x')`, nil); !errors.Is(err, cleolease.ErrForeignTransaction) { //nolint:staticcheck
				t.Errorf("Execer.Exec inside a foreign transaction = %v, want ErrForeignTransaction", err)
			}
			st, err := dc.Prepare(`INSERT INTO t(v) VALUES ('x')`)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Exec(nil); !errors.Is(err, cleolease.ErrForeignTransaction) { //nolint:staticcheck
				t.Errorf("Stmt.Exec inside a foreign transaction = %v, want ErrForeignTransaction", err)
			}
			// Begin inside a transaction: SQLite's own refusal, as go-sqlite3.
			var se sqlite3.Error
			if _, err := dc.Begin(); !errors.As(err, &se) || se.Code != sqlite3.ErrError { //nolint:staticcheck
				t.Errorf("Begin inside a foreign transaction = %v, want SQLite's 'cannot start a transaction within a transaction'", err)
			}
		})
		if n := count(); n != 5 {
			t.Errorf("committed rows = %d, want 5", n)
		}
	})
}

func TestDriverReadOnlyOpen(t *testing.T) {
	t.Run("fresh plain file", func(t *testing.T) {
		path := dtCreatePlainFile(t)
		db := dtOpen(t, "file:"+path+"?mode=ro")
		if got := dtString(t, db, `SELECT group_concat(v, ',') FROM (SELECT v FROM t ORDER BY id)`); got != "one,two" {
			t.Fatalf("read = %q", got)
		}
		_, err := db.Exec(`INSERT INTO t(v) VALUES ('three')`)
		if se := dtSQLiteErr(t, err); se.Code != sqlite3.ErrReadonly {
			t.Errorf("write error code = %v, want ErrReadonly", se.Code)
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatalf("Begin on a read-only open: %v", err)
		}
		defer tx.Rollback()
		_, err = tx.Exec(`UPDATE t SET v = 'x'`)
		if se := dtSQLiteErr(t, err); se.Code != sqlite3.ErrReadonly {
			t.Errorf("write error code in tx = %v, want ErrReadonly", se.Code)
		}
		tx.Rollback()
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if dtHasTable(t, path, "_writer_leases") || dtHasTable(t, path, "_writer_queue") {
			t.Error("a read-only open created the lease tables")
		}
		if _, err := os.Stat(path + "-cleolease"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a read-only open created the sidecar (stat: %v)", err)
		}
	})

	t.Run("next to a cleolease writer", func(t *testing.T) {
		path := dtPath(t)
		w := dtOpen(t, "file:"+path)
		dtExec(t, w, `CREATE TABLE t(v)`)
		dtExec(t, w, `INSERT INTO t VALUES (1)`)
		r := dtOpen(t, "file:"+path+"?mode=ro")
		if n := dtInt(t, r, `SELECT count(*) FROM t`); n != 1 {
			t.Fatalf("reader sees %d rows, want 1", n)
		}
		dtExec(t, w, `INSERT INTO t VALUES (2)`)
		if n := dtInt(t, r, `SELECT count(*) FROM t`); n != 2 {
			t.Fatalf("reader sees %d rows, want 2", n)
		}
		_, err := r.Exec(`DELETE FROM t`)
		if se := dtSQLiteErr(t, err); se.Code != sqlite3.ErrReadonly {
			t.Errorf("write error code = %v, want ErrReadonly", se.Code)
		}
	})
}

func TestDriverReadOnlyTx(t *testing.T) {
	ctx := context.Background()
	path := dtCreatePlainFile(t)
	// Linger 0: a write's lease row is released when the write ends, so an
	// active row can only belong to an open transaction.
	db := dtOpen(t, "file:"+path+"?_lease_linger=0")
	db.SetMaxOpenConns(1) // every statement below runs on the same connection

	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			g := dtGrants(t, db)
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if n := dtInt(t, tx, `SELECT count(*) FROM t`); n < 2 {
				t.Errorf("read in tx: %d rows", n)
			}
			// No lease while it is open.
			dtWantNoHolder(t, path)
			_, err = tx.Exec(`INSERT INTO t(v) VALUES ('ro')`)
			if se := dtSQLiteErr(t, err); se.Code != sqlite3.ErrReadonly {
				t.Errorf("write in a read-only tx: code %v, want ErrReadonly", se.Code)
			}
			dtWantNoHolder(t, path)
			if end == "commit" {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := dtGrants(t, db) - g; got != 0 {
				t.Errorf("read-only tx made %d grants", got)
			}
			// The same connection writes again.
			if q := dtInt(t, db, `PRAGMA query_only`); q != 0 {
				t.Errorf("query_only = %d after the read-only tx", q)
			}
			dtExec(t, db, `INSERT INTO t(v) VALUES (?)`, "after "+end)
			tx, err = db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			dtExec(t, tx, `INSERT INTO t(v) VALUES (?)`, "tx after "+end)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n := dtInt(t, dtRaw(t, path), `SELECT count(*) FROM t WHERE v = 'ro'`); n != 0 {
		t.Errorf("read-only transactions wrote %d rows", n)
	}
	if n := dtInt(t, dtRaw(t, path), `SELECT count(*) FROM t WHERE v LIKE '%after%'`); n != 4 {
		t.Errorf("writes after the read-only transactions: %d, want 4", n)
	}
}

func TestDriverSQLiteErrorsUnchanged(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path)
	dtExec(t, db, `CREATE TABLE u(k TEXT UNIQUE)`)
	dtExec(t, db, `CREATE TABLE parent(id INTEGER PRIMARY KEY)`)
	dtExec(t, db, `CREATE TABLE child(pid INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)`)
	dtExec(t, db, `INSERT INTO u VALUES ('dup')`)

	wantUnique := func(t *testing.T, what string, err error) {
		t.Helper()
		if se := dtSQLiteErr(t, err); se.ExtendedCode != sqlite3.ErrConstraintUnique {
			t.Errorf("%s: extended code %v, want ErrConstraintUnique", what, se.ExtendedCode)
		}
	}

	_, err := db.ExecContext(ctx, `INSERT INTO u VALUES ('dup')`)
	wantUnique(t, "db.Exec", err)

	st, err := db.PrepareContext(ctx, `INSERT INTO u VALUES (?)`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.ExecContext(ctx, "dup")
	wantUnique(t, "Stmt.Exec", err)
	st.Close()

	var k string
	err = db.QueryRowContext(ctx, `INSERT INTO u VALUES ('dup') RETURNING k`).Scan(&k)
	wantUnique(t, "INSERT … RETURNING", err)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	dtExec(t, tx, `INSERT INTO u VALUES ('in tx')`)
	_, err = tx.ExecContext(ctx, `INSERT INTO u VALUES ('dup')`)
	wantUnique(t, "tx.Exec", err)
	if err := tx.Commit(); err != nil { // the statement failed, not the transaction
		t.Fatalf("Commit after a failed statement: %v", err)
	}

	// SQLite checks UNIQUE per statement, so a constraint error at COMMIT
	// is a deferred foreign key.
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	dtExec(t, tx, `INSERT INTO child VALUES (99)`)
	err = tx.Commit()
	if se := dtSQLiteErr(t, err); se.ExtendedCode != sqlite3.ErrConstraintForeignKey {
		t.Errorf("tx.Commit: extended code %v, want ErrConstraintForeignKey", se.ExtendedCode)
	}
	// The autocommit form fails the same way, at its own (driver) COMMIT.
	_, err = db.ExecContext(ctx, `INSERT INTO child VALUES (98)`)
	if se := dtSQLiteErr(t, err); se.ExtendedCode != sqlite3.ErrConstraintForeignKey {
		t.Errorf("db.Exec deferred FK: extended code %v, want ErrConstraintForeignKey", se.ExtendedCode)
	}

	// Nothing failed got committed, the pool is healthy, and no lease is
	// left behind (mode require with a short wait would fail otherwise).
	if n := dtInt(t, db, `SELECT count(*) FROM child`); n != 0 {
		t.Errorf("child has %d rows after failed commits", n)
	}
	if got := dtString(t, db, `SELECT group_concat(k, ',') FROM (SELECT k FROM u ORDER BY rowid)`); got != "dup,in tx" {
		t.Errorf("u = %q, want dup,in tx", got)
	}
	db2 := dtOpen(t, "file:"+path+"?_lease_mode=require&_lease_wait=10s")
	dtExec(t, db2, `INSERT INTO parent VALUES (1)`)
}

func TestDriverLeaseModeOff(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path+"?_lease_mode=off")
	dtExec(t, db, `CREATE TABLE t(v)`)
	dtExec(t, db, `INSERT INTO t VALUES (1)`)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	dtExec(t, tx, `INSERT INTO t VALUES (2)`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `INSERT INTO t VALUES (3) RETURNING v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if n := dtInt(t, db, `SELECT count(*) FROM t`); n != 3 {
		t.Fatalf("count = %d, want 3", n)
	}
	if got := strings.ToLower(dtString(t, db, `PRAGMA journal_mode`)); got != "wal" {
		t.Errorf("journal_mode = %q, want wal (defaults apply in mode off too)", got)
	}
	if dtHasTable(t, path, "_writer_leases") || dtHasTable(t, path, "_writer_queue") {
		t.Error("mode off created the lease tables")
	}
	if _, err := os.Stat(path + "-cleolease"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mode off created the sidecar (stat: %v)", err)
	}
}

// A busy_timeout the user sets on a connection must survive the driver's
// leased writes on it (the driver lowers it around BEGIN IMMEDIATE),
// whichever way the PRAGMA was issued.
func TestDriverUserBusyTimeoutKept(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		set  func(t *testing.T, c *sql.Conn, ms int)
	}{
		{"Exec", func(t *testing.T, c *sql.Conn, ms int) {
			dtExec(t, c, fmt.Sprintf(`PRAGMA busy_timeout = %d`, ms))
		}},
		{"QueryRow", func(t *testing.T, c *sql.Conn, ms int) {
			// The usual idiom: the PRAGMA returns the new value.
			if got := dtInt(t, c, fmt.Sprintf(`PRAGMA busy_timeout = %d`, ms)); got != int64(ms) {
				t.Fatalf("PRAGMA returned %d", got)
			}
		}},
		{"prepared", func(t *testing.T, c *sql.Conn, ms int) {
			st, err := c.PrepareContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, ms))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.ExecContext(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := dtPath(t)
			// Linger 0: every write claims the lane afresh.
			db := dtOpen(t, "file:"+path+"?_lease_linger=0")
			c := dtConn(t, db)
			dtExec(t, c, `CREATE TABLE t(v)`)
			dtExec(t, c, `INSERT INTO t VALUES (1)`)
			if got := dtInt(t, c, `PRAGMA busy_timeout`); got != 30000 {
				t.Fatalf("busy_timeout = %d, want 30000", got)
			}
			tc.set(t, c, 777)
			dtExec(t, c, `INSERT INTO t VALUES (2)`)
			if got := dtInt(t, c, `PRAGMA busy_timeout`); got != 777 {
				t.Errorf("busy_timeout = %d after a leased write, want the user's 777", got)
			}
			tc.set(t, c, 888)
			tx, err := c.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			dtExec(t, tx, `INSERT INTO t VALUES (3)`)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := dtInt(t, c, `PRAGMA busy_timeout`); got != 888 {
				t.Errorf("busy_timeout = %d after a leased transaction, want the user's 888", got)
			}
		})
	}
}
