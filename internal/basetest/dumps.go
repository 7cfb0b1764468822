package basetest

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/writer"
)

// dumpSchema is the application's schema of DumpsReload.
const dumpSchema = `CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT)`

// DumpsReload checks, through the cleolease driver driverName (dsn makes
// a DSN of a path), what an application that exports every table
// sqlite_master lists — the lease tables with its own — and imports the
// rows again may do (issue 39): write src with rows on two lanes and
// close it (the application stopped); export; import into a fresh file,
// dst, and into src itself after dropping every table, each as one
// transaction of INSERTs after the schema is created again. Every import
// succeeds, keeps the application's rows, and both lanes take a write at
// once afterwards. The lease tables' import triggers make the difference:
// without them the first import fails "UNIQUE constraint failed".
func DumpsReload(t testing.TB, driverName string, dsn func(path string) string, src, dst string) {
	t.Helper()
	ctx := context.Background()
	open := func(path string) *sql.DB {
		db, err := sql.Open(driverName, dsn(path))
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	app := open(src)
	if _, err := app.ExecContext(ctx, dumpSchema); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`INSERT INTO users VALUES ('u1', 'one')`, `INSERT INTO users VALUES ('u2', 'two')`} {
		if _, err := app.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.ExecContext(writer.WithLane(ctx, "main", "b"), `INSERT INTO settings VALUES ('k', 'v')`); err != nil {
		t.Fatal(err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}

	db := open(src)
	exp := exportTables(t, db)
	db.Close()
	for _, target := range []string{dst, src} {
		db := open(target)
		importTables(t, db, exp)
		var users, settings int
		if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM settings)`).Scan(&users, &settings); err != nil || users != 2 || settings != 1 {
			t.Fatalf("after the import into %s: %d users, %d settings (%v); want 2 and 1", target, users, settings, err)
		}
		for _, lane := range []string{"default", "b"} {
			wctx, cancel := context.WithTimeout(writer.WithLane(ctx, "main", lane), 5*time.Second)
			_, err := db.ExecContext(wctx, `INSERT INTO settings VALUES (?, 'after')`, "after-"+lane)
			cancel()
			if err != nil {
				t.Fatalf("a write on lane %s after the import into %s: %v", lane, target, err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// exported is one table's columns and rows.
type exported struct {
	name string
	cols []string
	rows [][]any
}

// exportTables reads every table sqlite_master lists, but SQLite's own.
func exportTables(t testing.TB, db *sql.DB) []exported {
	t.Helper()
	names := queryNames(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	var out []exported
	for _, name := range names {
		rows, err := db.Query(`SELECT * FROM "` + name + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		e := exported{name: name, cols: cols}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			e.rows = append(e.rows, vals)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	lease := 0
	for _, e := range out {
		if strings.HasPrefix(e.name, "_writer_") {
			lease += len(e.rows)
		}
	}
	if lease == 0 {
		t.Fatal("the export holds no lease rows: the check would prove nothing")
	}
	return out
}

// importTables drops every table of db, creates the application's schema
// and inserts exp's rows in one transaction.
func importTables(t testing.TB, db *sql.DB, exp []exported) {
	t.Helper()
	for _, name := range queryNames(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`) {
		if _, err := db.Exec(`DROP TABLE "` + name + `"`); err != nil {
			t.Fatalf("drop %s: %v", name, err)
		}
	}
	if _, err := db.Exec(dumpSchema); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, e := range exp {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(e.cols)), ", ")
		q := `INSERT INTO "` + e.name + `" ("` + strings.Join(e.cols, `", "`) + `") VALUES (` + marks + `)`
		for _, r := range e.rows {
			if _, err := tx.Exec(q, r...); err != nil {
				t.Fatalf("inserting into %s: %v", e.name, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// queryNames returns the first column of query's rows.
func queryNames(t testing.TB, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
