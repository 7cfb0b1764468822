package compat_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver, for the control run only
)

// sqlxSchema is created by the parent before the children start.
const sqlxSchema = `
CREATE TABLE events (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	pid    INTEGER NOT NULL,
	worker INTEGER NOT NULL,
	seq    INTEGER NOT NULL,
	note   TEXT NOT NULL,
	UNIQUE (pid, worker, seq)
);
CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL);
INSERT INTO counters (name, n) VALUES ('total', 0);
`

type sqlxEvent struct {
	ID     int64  `db:"id"`
	PID    int    `db:"pid"`
	Worker int    `db:"worker"`
	Seq    int    `db:"seq"`
	Note   string `db:"note"`
}

func init() { roles["sqlx"] = sqlxChild }

// sqlxChild is plain sqlx code; only the driver name says cleolease. Each
// iteration: an insert (NamedExec, or a NamedStmt prepared once), Get and
// Select to read it back, and a
// Beginx transaction that reads the shared counter and writes it back
// incremented (a read-then-write transaction: with plain go-sqlite3 this
// fails with "database is locked" under contention).
func sqlxChild(ctx context.Context, a childArgs) (report, error) {
	var r report
	db, err := sqlx.Open(a.Driver, a.DSN)
	if err != nil {
		return r, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return r, err
	}
	if err := ready(); err != nil {
		return r, err
	}
	const insert = `INSERT INTO events (pid, worker, seq, note) VALUES (:pid, :worker, :seq, :note)`
	pid := os.Getpid()
	ops := make([]report, a.Workers)
	runWorkers(a, func(w int) {
		r := &ops[w]
		// Odd workers insert through a prepared named statement (the
		// statement path), even ones through NamedExec.
		var stmt *sqlx.NamedStmt
		if w%2 == 1 {
			var err error
			if stmt, err = db.PrepareNamedContext(ctx, insert); err != nil {
				r.fail("PrepareNamed", err)
				return
			}
			defer stmt.Close()
		}
		for seq := range a.N {
			ev := sqlxEvent{PID: pid, Worker: w, Seq: seq, Note: fmt.Sprintf("p%d-w%d-s%d", pid, w, seq)}
			var err error
			if stmt != nil {
				_, err = stmt.ExecContext(ctx, ev)
			} else {
				_, err = db.NamedExecContext(ctx, insert, ev)
			}
			if err != nil {
				r.fail("NamedExec", err)
				continue
			}
			r.add("insert")

			var n int
			if err := db.GetContext(ctx, &n, `SELECT count(*) FROM events WHERE pid = ? AND worker = ?`, pid, w); err != nil {
				r.fail("Get", err)
			} else if n != seq+1 {
				r.fail("Get", fmt.Errorf("worker %d sees %d of its rows after %d inserts", w, n, seq+1))
			}
			var mine []sqlxEvent
			if err := db.SelectContext(ctx, &mine, `SELECT * FROM events WHERE pid = ? AND worker = ? ORDER BY seq`, pid, w); err != nil {
				r.fail("Select", err)
			} else if len(mine) != seq+1 || mine[seq].Note != ev.Note {
				r.fail("Select", fmt.Errorf("worker %d selected %d rows after %d inserts", w, len(mine), seq+1))
			}

			if err := sqlxIncrement(ctx, db); err != nil {
				r.fail("Beginx", err)
				continue
			}
			r.add("commit")
		}
	})
	for _, o := range ops {
		r.merge(o)
	}
	r.collectLease(ctx, a, db.DB)
	return r, nil
}

// sqlxIncrement is a read-modify-write transaction, as an application
// would write it: a deferred transaction (no _txlock) that reads, then
// writes.
func sqlxIncrement(ctx context.Context, db *sqlx.DB) error {
	tx, err := db.Beginx()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT n FROM counters WHERE name = 'total'`); err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE counters SET n = ? WHERE name = 'total'`, n+1); err != nil {
		return err
	}
	return tx.Commit()
}

func sqlxSetup(t *testing.T, driver, dsn string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(sqlxSchema); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSqlxMultiProcess: 4 processes × 2 goroutines of unchanged sqlx code
// (Get, Select, NamedExec, Beginx + tx.Exec + Commit) on one file: no
// errors at all, every insert present, the counter exact.
func TestSqlxMultiProcess(t *testing.T) {
	t.Parallel()
	_, dsn := tempDSN(t)
	db := sqlxSetup(t, "cleolease", dsn)
	r := runProcs(t, "sqlx", childArgs{DSN: dsn, Procs: 4, Workers: 2, N: 50})
	r.requireClean(t)
	r.requireLeased(t, 2*r.args.Workers*r.args.N) // an insert and a transaction per iteration

	want := r.args.Procs * r.args.Workers * r.args.N
	if got := r.total("insert"); got != want {
		t.Errorf("children report %d inserts, want %d", got, want)
	}
	if got := r.total("commit"); got != want {
		t.Errorf("children report %d commits, want %d", got, want)
	}
	var rows []sqlxEvent
	if err := db.Select(&rows, `SELECT * FROM events ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(rows) != want {
		t.Errorf("%d events in the file, want %d", len(rows), want)
	}
	var counter int
	if err := db.Get(&counter, `SELECT n FROM counters WHERE name = 'total'`); err != nil {
		t.Fatal(err)
	}
	if counter != want {
		t.Errorf("counter = %d, want %d (every increment committed exactly once)", counter, want)
	}
	owners := make([]int, len(rows))
	for i, e := range rows {
		owners[i] = e.PID
	}
	requireInterleaved(t, r, owners)
}

// TestSqlxControlRawSQLite3 runs the same children with plain go-sqlite3
// (driver "sqlite3", same WAL and busy_timeout settings): its deferred
// read-then-write transactions fail with "database is locked", which is
// what the cleolease run above proves does not happen.
func TestSqlxControlRawSQLite3(t *testing.T) {
	if testing.Short() {
		t.Skip("control run")
	}
	t.Parallel()
	path, _ := tempDSN(t)
	dsn := "file:" + path + "?_busy_timeout=30000&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1"
	sqlxSetup(t, "sqlite3", dsn)
	r := runProcs(t, "sqlx", childArgs{Driver: "sqlite3", DSN: dsn, Procs: 4, Workers: 2, N: 50})
	locked := 0
	for _, rep := range r.reports {
		locked += rep.LockErrors
	}
	t.Logf("sqlite3 control: %d lock errors, %d of %d increments committed", locked,
		r.total("commit"), r.args.Procs*r.args.Workers*r.args.N)
	if locked == 0 {
		t.Errorf("the control run with plain go-sqlite3 met no lock error: the workload is not contended enough to prove anything")
	}
}
