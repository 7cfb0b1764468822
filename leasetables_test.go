package cleolease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	msqlite "github.com/golang-migrate/migrate/v4/database/sqlite3"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
)

// Tools that walk the schema meet the lease tables, which live in the
// user's database: golang-migrate's Drop drops them, an application that
// empties every table deletes their rows. These tests hold the engine to
// what the user meant: such a transaction commits, the next write (in this
// process and in another) takes the lease again at an epoch above every
// earlier one, and a lost lease is blamed on a break only after one.

func init() {
	roles["lt-write"] = roleLeaseTablesWrite
	roles["lt-break"] = roleLeaseTablesBreak
}

// roleLeaseTablesWrite opens CLEOLEASE_DSN, takes the lease, writes a row
// of table child under it, says "EPOCH n" and exits.
func roleLeaseTablesWrite() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	ctx := context.Background()
	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer l.Release()
	if _, err := db.ExecContext(l.Context(ctx), `CREATE TABLE IF NOT EXISTS child(n INTEGER); INSERT INTO child VALUES (1)`); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("EPOCH", l.Epoch())
	return 0
}

// roleLeaseTablesBreak opens CLEOLEASE_DSN, breaks the default lane by
// force, says "BROKE" and exits.
func roleLeaseTablesBreak() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	if _, err := cleolease.Break(context.Background(), db, "main", "default", true); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("BROKE")
	return 0
}

// leaseEpoch takes and releases the lease on db and returns its epoch.
func leaseEpoch(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	l, err := cleolease.AcquireLease(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	return l.Epoch()
}

// nextWritesTakeTheLease checks that, after the lease tables lost their
// rows, a write in this process and one in another process succeed, each
// at an epoch above every epoch before (last), and that the tables are
// back.
func nextWritesTakeTheLease(t *testing.T, db *sql.DB, dsn string, last int64) {
	t.Helper()
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS after(n INTEGER); INSERT INTO after VALUES (1)`); err != nil {
		t.Fatalf("the next write in this process: %v", err)
	}
	here := leaseEpoch(t, db)
	if here <= last {
		t.Fatalf("this process's next epoch %d, want above %d", here, last)
	}
	c := startChild(t, "lt-write", dsn, proctest.GoraceNoExitSleep())
	there, err := strconv.ParseInt(c.expect("EPOCH"), 10, 64)
	if err != nil || there <= here {
		t.Fatalf("the other process's epoch %d (%v), want above %d", there, err, here)
	}
	if err := c.Cmd.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('_writer_leases', '_writer_queue', 'ux_writer_leases_active', 'ix_writer_queue_order')`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("lease tables and indexes after the writes: %d (%v), want 4", n, err)
	}
}

// TestDropLeaseTablesInTransaction: a transaction that drops both lease
// tables commits, and the next writes take the lease again.
func TestDropLeaseTablesInTransaction(t *testing.T) {
	path, _ := newFile(t)
	dsn := "file:" + path
	db := openLeased(t, dsn)
	before := leaseEpoch(t, db)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`INSERT INTO counter VALUES (2, 0)`, `DROP TABLE _writer_leases`, `DROP TABLE _writer_queue`} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit of the transaction that dropped the lease tables: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM counter WHERE id = 2`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the transaction's own row: %d (%v), want it committed", n, err)
	}
	nextWritesTakeTheLease(t, db, dsn, before)
}

// TestDeleteEveryTableInTransaction: a transaction that deletes the rows of
// every table, the lease tables included, commits.
func TestDeleteEveryTableInTransaction(t *testing.T) {
	for _, mode := range []string{"WAL", "DELETE"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(testdir.New(t), "app.db")
			dsn := "file:" + path + "?_journal_mode=" + mode
			db := openLeased(t, dsn)
			if _, err := db.Exec(`CREATE TABLE items(id INTEGER PRIMARY KEY, v TEXT NOT NULL); CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO items(v) VALUES ('a'), ('b')`); err != nil {
				t.Fatal(err)
			}
			before := leaseEpoch(t, db)
			ctx := context.Background()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
			if err != nil {
				t.Fatal(err)
			}
			var tables []string
			for rows.Next() {
				var name string
				rows.Scan(&name)
				tables = append(tables, name)
			}
			rows.Close()
			if !strings.Contains(strings.Join(tables, ","), "_writer_leases") {
				t.Fatalf("tables %v: the lease tables are not there to delete", tables)
			}
			for _, name := range tables {
				if _, err := tx.Exec(`DELETE FROM "` + name + `"`); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("commit of the transaction that emptied every table: %v", err)
			}
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("items after the commit: %d (%v), want 0", n, err)
			}
			nextWritesTakeTheLease(t, db, dsn, before)
		})
	}
}

// TestGolangMigrateDropOnCleolease: golang-migrate's sqlite3 driver,
// given a database opened with cleolease, drops every table (the lease
// tables included, each in its own transaction), and the next writes take
// the lease again.
func TestGolangMigrateDropOnCleolease(t *testing.T) {
	testdir.LeaveOpen(t, "golang-migrate's sqlite3 Drop runs VACUUM with db.Query and never closes the rows (database/sqlite3/sqlite3.go), so that connection keeps the database open")
	path := filepath.Join(testdir.New(t), "app.db")
	dsn := "file:" + path
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src, err := iofs.New(os.DirFS("testdata/migrations"), ".")
	if err != nil {
		t.Fatal(err)
	}
	drv, err := msqlite.WithInstance(db, &msqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite3", drv)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	before := leaseEpoch(t, db)
	if err := m.Drop(); err != nil {
		t.Fatalf("golang-migrate's Drop: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('items', 'ran', 'schema_migrations')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("user tables left after Drop: %d (%v)", n, err)
	}
	// Only sqlite_sequence can stop Drop (SQLite never drops it); the lease
	// tables must not be what creates it.
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("sqlite_sequence after Drop: %d (%v)", n, err)
	}
	db2 := openLeased(t, dsn) // a second pool of this process: same engine
	nextWritesTakeTheLease(t, db2, dsn, before)
}

// TestLeaseLostReasonNamesBreakOnlyAfterBreak: a lease whose row was
// deleted by a connection that did not hold it is lost, and the error says
// so, not that the lane was broken; a lease broken by another process
// says it was broken.
func TestLeaseLostReasonNamesBreakOnlyAfterBreak(t *testing.T) {
	path, _ := newFile(t)
	dsn := "file:" + path
	db := openLeased(t, dsn)
	ctx := context.Background()
	lostReason := func(l *cleolease.Lease) string {
		t.Helper()
		tx, err := db.BeginTx(l.Context(ctx), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`UPDATE counter SET n = n + 1`); err != nil {
			t.Fatal(err)
		}
		err = tx.Commit()
		var le *cleolease.LeaseError
		if !errors.Is(err, cleolease.ErrLeaseLost) || !errors.As(err, &le) {
			t.Fatalf("commit under a lost lease: %v, want ErrLeaseLost", err)
		}
		return le.Reason
	}

	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(cleolease.WithoutLease(ctx), `DELETE FROM _writer_leases`); err != nil {
		t.Fatal(err)
	}
	why := lostReason(l)
	l.Release()
	if strings.Contains(strings.ToLower(why), "break") || strings.Contains(why, "broken") || !strings.Contains(why, "deleted") {
		t.Errorf("reason after the row was deleted: %q, want it named, with no break", why)
	}

	l, err = cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "lt-break", dsn, proctest.GoraceNoExitSleep())
	c.expect("BROKE")
	why = lostReason(l)
	l.Release()
	if !strings.Contains(why, "broken") {
		t.Errorf("reason after a Break: %q, want it to say broken", why)
	}
	if _, err := db.Exec(`UPDATE counter SET n = n + 1`); err != nil {
		t.Fatalf("the next write after the break: %v", err)
	}
}

// TestLeaseTablesDroppedByAnotherTool: a tool that takes no lease (here
// plain go-sqlite3) drops the lease tables while this process keeps the
// lane between writes; the next write finds its lease gone right after
// BEGIN, before running anything, takes the lease again (recreating the
// tables) and succeeds, at a higher epoch.
func TestLeaseTablesDroppedByAnotherTool(t *testing.T) {
	path, raw := newFile(t)
	db := openLeased(t, "file:"+path+"?_lease_linger=1h")
	before := leaseEpoch(t, db)
	if _, err := db.Exec(`INSERT INTO counter VALUES (2, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`DROP TABLE _writer_leases; DROP TABLE _writer_queue`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE counter SET n = n + 1 WHERE id = 2`); err != nil {
		t.Fatalf("the next write after another tool dropped the lease tables: %v", err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE counter SET n = n + 1 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("a transaction after that: %v", err)
	}
	if after := leaseEpoch(t, db); after <= before {
		t.Fatalf("epoch %d after the drop, want above %d", after, before)
	}
}

// TestDropLeaseTablesWhileAnotherProcessWaits: the transaction that drops
// the lease tables commits while another process waits for the lane, and
// that process then takes it, at a higher epoch.
func TestDropLeaseTablesWhileAnotherProcessWaits(t *testing.T) {
	path, _ := newFile(t)
	dsn := "file:" + path
	db := openLeased(t, dsn)
	ctx := context.Background()
	before := leaseEpoch(t, db)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "lt-write", dsn, proctest.GoraceNoExitSleep())
	eventually(t, "the other process to wait for the lane", func() bool {
		st, err := cleolease.Status(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range st {
			if l.Scope == "main" && l.Lane == "default" && l.Waiting > 0 {
				return true
			}
		}
		return false
	})
	for _, q := range []string{`DROP TABLE _writer_leases`, `DROP TABLE _writer_queue`, `INSERT INTO counter VALUES (2, 0)`} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	there, err := strconv.ParseInt(c.expect("EPOCH"), 10, 64)
	if err != nil || there <= before {
		t.Fatalf("the waiting process's epoch %d (%v), want above %d", there, err, before)
	}
	if err := c.Cmd.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
}
