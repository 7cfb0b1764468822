package cleolease_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/golang-migrate/migrate/v4"
	msqlite "github.com/golang-migrate/migrate/v4/database/sqlite3"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
)

// Dumps that reload (issue 39). An application that exports every table
// it finds in sqlite_master and imports the rows again — into a fresh
// file, or into the same file after dropping its schema with
// golang-migrate's Drop and migrating it again, the way pocket-id's
// export and import do — meets the lease tables among its own. It failed
// "UNIQUE constraint failed" on _writer_leases or _writer_sidecar, and
// into the same file that was after the Drop: the application's rows
// were gone. And a file reloaded from `sqlite3 app.db .dump` must be
// writable through cleolease at once.

func init() { roles["dump-app"] = roleDumpApp }

// dumpMigrations are the application's two migrations.
var dumpMigrations = fstest.MapFS{
	"1_users.up.sql":      {Data: []byte(`CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL); CREATE TABLE tokens (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, token BLOB NOT NULL);`)},
	"1_users.down.sql":    {Data: []byte(`DROP TABLE tokens; DROP TABLE users;`)},
	"2_settings.up.sql":   {Data: []byte(`CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT);`)},
	"2_settings.down.sql": {Data: []byte(`DROP TABLE settings;`)},
}

// dumpMigrator is golang-migrate over db with dumpMigrations.
func dumpMigrator(db *sql.DB) (*migrate.Migrate, error) {
	src, err := iofs.New(dumpMigrations, ".")
	if err != nil {
		return nil, err
	}
	drv, err := msqlite.WithInstance(db, &msqlite.Config{})
	if err != nil {
		return nil, err
	}
	return migrate.NewWithInstance("iofs", src, "sqlite3", drv)
}

// fillApp migrates db up and writes the application's rows: users and
// their tokens on the default lane, settings on lane "b" (so that two
// lanes have lease rows).
func fillApp(ctx context.Context, db *sql.DB) error {
	m, err := dumpMigrator(db)
	if err != nil {
		return err
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return err
	}
	for i := range 5 {
		if _, err := db.ExecContext(ctx, `INSERT INTO users VALUES (?, ?)`, fmt.Sprint("u", i), fmt.Sprint("user ", i)); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO tokens (user_id, token) VALUES (?, ?)`, fmt.Sprint("u", i), []byte{0, byte(i), 0xff}); err != nil {
			return err
		}
	}
	b := cleolease.WithLane(ctx, "main", "b")
	for i := range 3 {
		if _, err := db.ExecContext(b, `INSERT INTO settings VALUES (?, ?)`, fmt.Sprint("k", i), fmt.Sprint("v", i)); err != nil {
			return err
		}
	}
	return nil
}

// roleDumpApp is the application: it opens CLEOLEASE_DSN, writes its rows
// (fillApp), says "ready" and keeps the database open until a line
// arrives on stdin.
func roleDumpApp() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		say("ERR", err)
		return 1
	}
	defer db.Close()
	if err := fillApp(context.Background(), db); err != nil {
		say("ERR", err)
		return 1
	}
	say("ready")
	bufio.NewScanner(os.Stdin).Scan()
	return 0
}

// tableExport is one table's rows, each a column-name → value map.
type tableExport struct {
	cols []string
	rows [][]any
}

// exportEveryTable reads every table sqlite_master lists (but SQLite's own
// and golang-migrate's schema_migrations), as an application's export
// does: the lease tables with the rest.
func exportEveryTable(t *testing.T, db *sql.DB) map[string]tableExport {
	t.Helper()
	var names []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	out := map[string]tableExport{}
	for _, name := range names {
		rows, err := db.Query(`SELECT * FROM "` + name + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		te := tableExport{cols: cols}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			te.rows = append(te.rows, vals)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		out[name] = te
	}
	for _, want := range []string{"_writer_leases", "_writer_sidecar", "users"} {
		if len(out[want].rows) == 0 {
			t.Fatalf("the export has no rows of %s: the test would prove nothing", want)
		}
	}
	return out
}

// importEveryTable brings exp into db as pocket-id's import does: with
// reset, golang-migrate's Drop (every table) and the migrations up again;
// then one transaction that inserts every exported row, table by table.
func importEveryTable(t *testing.T, db *sql.DB, exp map[string]tableExport, reset bool) {
	t.Helper()
	m, err := dumpMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	if reset {
		if err := m.Drop(); err != nil {
			t.Fatalf("golang-migrate's Drop: %v", err)
		}
		if m, err = dumpMigrator(db); err != nil { // Drop dropped its table too
			t.Fatal(err)
		}
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// users before tokens (as an order an application would give); the rest in map order.
	order := []string{"users", "tokens"}
	for name := range exp {
		if name != "users" && name != "tokens" {
			order = append(order, name)
		}
	}
	for _, name := range order {
		te := exp[name]
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(te.cols)), ", ")
		q := `INSERT INTO "` + name + `" ("` + strings.Join(te.cols, `", "`) + `") VALUES (` + marks + `)`
		for _, r := range te.rows {
			if _, err := tx.Exec(q, r...); err != nil {
				t.Fatalf("inserting into table %q: %v", name, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// checkAppRows checks that db holds the application's rows as fillApp
// wrote them once.
func checkAppRows(t *testing.T, db *sql.DB) {
	t.Helper()
	for table, want := range map[string]int{"users": 5, "tokens": 5, "settings": 3} {
		if n := count(t, db, `SELECT count(*) FROM `+table); n != int64(want) {
			t.Errorf("%s has %d rows, want %d", table, n, want)
		}
	}
}

// writesTakeTheLease checks that db's file takes writes on both lanes at
// once: in this process (db) and in a new one.
func writesTakeTheLease(t *testing.T, db *sql.DB, dsn string) {
	t.Helper()
	ctx := context.Background()
	for _, lane := range []string{"default", "b"} {
		wctx, cancel := context.WithTimeout(cleolease.WithLane(ctx, "main", lane), 5*time.Second)
		_, err := db.ExecContext(wctx, `INSERT INTO settings VALUES (?, 'here')`, "after-"+lane)
		cancel()
		if err != nil {
			st, serr := cleolease.Status(context.Background(), db)
			t.Fatalf("a write on lane %s in this process: %v; status: %+v (%v)", lane, err, st, serr)
		}
	}
	c := startChild(t, "lt-write", dsn+"&_lease_mode=require&_lease_wait=5s", proctest.GoraceNoExitSleep())
	c.expect("EPOCH")
	if err := c.Cmd.Wait(); err != nil {
		t.Fatalf("a write in another process: %v", err)
	}
}

// startDumpApp starts the application on path (its lease kept for an hour
// after each write, so that its rows are active while it runs) and, unless
// running, lets it exit cleanly; stop ends a running one.
func startDumpApp(t *testing.T, path string, running bool) (stop func()) {
	t.Helper()
	c := startChild(t, "dump-app", "file:"+path+"?_lease_linger=1h")
	c.expect("ready")
	var once sync.Once
	stop = func() {
		once.Do(func() {
			c.send("exit")
			if err := c.Cmd.Wait(); err != nil {
				t.Errorf("the application's exit: %v", err)
			}
		})
	}
	if !running {
		stop()
		stop = func() {}
	}
	return stop
}

// TestExportImportEveryTable: an application's export of every table,
// imported into a fresh file and into the same file (Drop, migrations,
// then the rows in one transaction), with the application stopped and
// running: the import succeeds, the application's rows are all there,
// and both lanes take writes at once, in this process and in another.
func TestExportImportEveryTable(t *testing.T) {
	for _, state := range []string{"stopped", "running"} {
		for _, into := range []string{"a fresh file", "the same file"} {
			t.Run("app "+state+", into "+into, func(t *testing.T) {
				testdir.LeaveOpen(t, "golang-migrate's sqlite3 Drop runs VACUUM with db.Query and never closes the rows (database/sqlite3/sqlite3.go), so that connection keeps the database open")
				root := testdir.New(t)
				src := filepath.Join(root, "app.db")
				stop := startDumpApp(t, src, state == "running")
				defer stop()
				db := openLeased(t, "file:"+src)
				exp := exportEveryTable(t, db)
				dst := src
				if into == "a fresh file" {
					if err := os.Mkdir(filepath.Join(root, "new"), 0o755); err != nil {
						t.Fatal(err)
					}
					dst = filepath.Join(root, "new", "app.db")
					db = openLeased(t, "file:"+dst)
				}
				importEveryTable(t, db, exp, true)
				checkAppRows(t, db)
				if dst != src && !platform.RefusesUnbound {
					// A copy's rows naming a live holder of the original
					// wait for it where its absence cannot be proven
					// (README "Backups and exports": open a copy once its
					// original's holders are gone).
					stop()
				}
				writesTakeTheLease(t, db, "file:"+dst+"?_lease_linger=0")
			})
		}
	}
}

// TestDumpReloadedIsWritable: `sqlite3 app.db .dump | sqlite3 new.db`,
// taken with the application stopped and running, gives a file that
// takes writes through cleolease at once, on both lanes.
func TestDumpReloadedIsWritable(t *testing.T) {
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") != "" && runtime.GOOS == "linux" {
			t.Fatal("the sqlite3 command is not installed (.ci/run installs it)")
		}
		t.Skip("the sqlite3 command is not installed")
	}
	for _, state := range []string{"stopped", "running"} {
		t.Run("app "+state, func(t *testing.T) {
			root := testdir.New(t)
			src, dst := filepath.Join(root, "app.db"), filepath.Join(root, "new.db")
			stop := startDumpApp(t, src, state == "running")
			defer stop()
			dump, err := exec.Command(sqlite3, src, ".dump").Output()
			if err != nil {
				t.Fatalf("sqlite3 .dump: %v", err)
			}
			if !strings.Contains(string(dump), "_writer_leases") {
				t.Fatal("the dump holds no lease rows: the test would prove nothing")
			}
			load := exec.Command(sqlite3, dst)
			load.Stdin = strings.NewReader(string(dump))
			if out, err := load.CombinedOutput(); err != nil || len(out) > 0 {
				t.Fatalf("sqlite3 new.db < dump: %v %s", err, out)
			}
			db := openLeased(t, "file:"+dst)
			checkAppRows(t, db)
			if !platform.RefusesUnbound {
				stop() // (see TestExportImportEveryTable)
			}
			writesTakeTheLease(t, db, "file:"+dst+"?_lease_linger=0")
		})
	}
}
