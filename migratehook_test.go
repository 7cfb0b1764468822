package cleolease_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

func init() {
	roles["migrator-open"] = roleMigratorOpen
	cleolease.RegisterMigrator("cleolease-test-migrator", cleolease.MigratorFunc(testMigrator))
}

// testMigrator is hand-written DDL guarded by PRAGMA user_version, as an
// application would write it. It logs every run in migrator_runs and every
// application of its change in migrator_applied, and records in
// migrator_overlap a run that found another run in progress.
func testMigrator(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrator_runs(pid INTEGER);
		CREATE TABLE IF NOT EXISTS migrator_live(pid INTEGER);
		CREATE TABLE IF NOT EXISTS migrator_overlap(pid INTEGER)`); err != nil {
		return err
	}
	pid := os.Getpid()
	for _, q := range []string{`INSERT INTO migrator_overlap SELECT ? FROM migrator_live LIMIT 1`,
		`INSERT INTO migrator_live VALUES (?)`, `INSERT INTO migrator_runs VALUES (?)`} {
		if _, err := db.ExecContext(ctx, q, pid); err != nil {
			return err
		}
	}
	var v int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v == 0 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE migrator_applied(pid INTEGER);
			INSERT INTO migrator_applied VALUES (?); PRAGMA user_version = 1`, pid); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	_, err := db.ExecContext(ctx, `DELETE FROM migrator_live WHERE pid = ?`, pid)
	return err
}

// roleMigratorOpen opens CLEOLEASE_DSN, says "READY", waits for "go", then
// queries the Migrator's table and reports "OK rows" or "ERR message".
func roleMigratorOpen() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	fmt.Println("READY")
	if in := bufio.NewScanner(os.Stdin); !in.Scan() || in.Text() != "go" {
		fmt.Println("ERR no go")
		return 1
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM migrator_applied`).Scan(&n); err != nil {
		fmt.Println("ERR", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	fmt.Println("OK", n)
	return 0
}

// TestMigratorEightProcesses: eight processes open a fresh file whose DSN
// names a registered Migrator: each ran it once, one at a time under the
// cold-open lease, its change was applied exactly once, and every process's
// first query saw it (issue 16, item 11).
func TestMigratorEightProcesses(t *testing.T) {
	path := filepath.Join(testdir.New(t), "migrator.db")
	mgFresh(t, path)
	dsn := "file:" + path + "?_migrations=cleolease-test-migrator"
	kids := make([]*child, 8)
	for i := range kids {
		kids[i] = startChild(t, "migrator-open", dsn)
	}
	for _, k := range kids {
		k.expect("READY")
	}
	for _, k := range kids {
		k.send("go")
	}
	for i, k := range kids {
		if got := k.expect("OK"); got != "1" {
			t.Errorf("process %d: first query saw %s applications, want 1", i, got)
		}
	}
	raw := mgRaw(t, path)
	count := func(q string) int {
		t.Helper()
		var n int
		if err := raw.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM migrator_applied`); n != 1 {
		t.Errorf("the change was applied %d times, want 1", n)
	}
	if n := count(`SELECT count(DISTINCT pid) FROM migrator_runs`); n != 8 {
		t.Errorf("%d processes ran the Migrator, want 8 (once each)", n)
	}
	if n := count(`SELECT count(*) FROM migrator_runs`); n != 8 {
		t.Errorf("%d runs, want 8", n)
	}
	if n := count(`SELECT count(*) FROM migrator_overlap`); n != 0 {
		t.Errorf("%d runs overlapped another, want 0", n)
	}
}

// errMigrator is the error of a Migrator that fails on purpose.
type errMigrator struct{ n int32 }

func (e *errMigrator) Error() string { return fmt.Sprintf("migrator failure %d", e.n) }

// TestMigratorFromConfig: a Migrator set in Config runs at the cold open
// on a private *sql.DB on the raw go-sqlite3 driver, valid only for the
// call; its failure comes back from the connect (matching
// ErrMigrationFailed, its own error reachable) and is not remembered as
// success: the next connect runs it again (issue 16, item 11).
func TestMigratorFromConfig(t *testing.T) {
	path := filepath.Join(testdir.New(t), "cfg.db")
	var calls atomic.Int32
	var kept *sql.DB
	cfg := &cleolease.Config{SQLiteDSN: "file:" + path, Migrator: cleolease.MigratorFunc(func(ctx context.Context, db *sql.DB) error {
		kept = db
		if _, ok := db.Driver().(*sqlite3.SQLiteDriver); !ok {
			return fmt.Errorf("the Migrator's db has driver %T, want go-sqlite3's", db.Driver())
		}
		if n := calls.Add(1); n == 1 {
			return &errMigrator{n}
		}
		_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS cfg_made(x)`)
		return err
	})}
	db, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	var em *errMigrator
	if !errors.Is(err, cleolease.ErrMigrationFailed) || !errors.As(err, &em) || em.n != 1 {
		t.Fatalf("first Ping = %v, want ErrMigrationFailed wrapping the Migrator's error", err)
	}
	if err := db.Ping(); err != nil {
		t.Fatalf("second Ping = %v, want the Migrator run again and succeed", err)
	}
	if _, err := db.Exec(`INSERT INTO cfg_made VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if kept == db {
		t.Fatal("the Migrator got the caller's pool")
	}
	if err := kept.Ping(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("the Migrator's db after the call: Ping = %v, want it closed", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("Migrator ran %d times, want 2 (the failure, then once)", n)
	}
}
