// Package basetest is the worker of the cross-process tests of the lease
// engine over each base (go-sqlite3, modernc.org/sqlite, …): a process
// that opens the engine over one base and the application's connections
// over that base's driver, and counts under the lease, each increment a
// fenced read-modify-write that logs who wrote under which epoch. Processes
// of different bases (one binary cannot link go-sqlite3 and a cgo-free
// base) run the same worker on one file, so that Verify can check that no
// update was lost and that no two grants overlapped.
//
// It imports no base: a test binary or a program linking one passes its
// sqlbase.Base and driver name (Main). The go-sqlite3 program is
// internal/basetest/mattnworker; the modernc base's tests run the worker in
// their own test binary (modernc/internal/base).
package basetest

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// Schema creates the tables the workers write: the counter (one row, n)
// and the log of increments (who made it, under which epoch, and the
// counter value it read).
const Schema = `CREATE TABLE IF NOT EXISTS counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
INSERT OR IGNORE INTO counter VALUES (1, 0);
CREATE TABLE IF NOT EXISTS log(id INTEGER PRIMARY KEY, who TEXT NOT NULL, epoch INTEGER NOT NULL, seen INTEGER NOT NULL)`

// The environment of a worker process (Main).
const (
	EnvDB     = "CLEOLEASE_BASETEST_DB"     // the database file (with Schema applied)
	EnvN      = "CLEOLEASE_BASETEST_N"      // how many increments
	EnvWho    = "CLEOLEASE_BASETEST_WHO"    // the name the log records
	EnvMarker = "CLEOLEASE_BASETEST_MARKER" // the exclusivity marker's path (Increment)
)

// Scope and Lane are the lane the workers take.
const (
	Scope = "basetest"
	Lane  = "counter"
)

// Main is the body of a worker process: it opens the lease engine of the
// file named by EnvDB over base with the DSN dsn(path) (in base's
// dialect), and the application's connections with sql.Open(driverName,
// dsn(path)); prints "ready"; waits for a line on stdin; makes EnvN
// increments (Increment) as EnvWho with the marker EnvMarker; and prints
// "done". Any failure prints "ERR" and the error. It returns the exit
// status (0 after "done").
func Main(base sqlbase.Base, driverName string, dsn func(path string) string) int {
	path, who, marker := os.Getenv(EnvDB), os.Getenv(EnvWho), os.Getenv(EnvMarker)
	n, err := strconv.Atoi(os.Getenv(EnvN))
	if err != nil || path == "" || marker == "" {
		fmt.Printf("ERR %s, %s and %s must be set (%v)\n", EnvDB, EnvN, EnvMarker, err)
		return 2
	}
	ctx := context.Background()
	e, err := lease.Open(ctx, lease.Options{Base: base, Path: path, DSN: dsn(path), TTL: time.Hour, Linger: 5 * time.Millisecond})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer e.Close()
	db, err := sql.Open(driverName, dsn(path))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	fmt.Println("ready")
	if !bufio.NewScanner(os.Stdin).Scan() {
		fmt.Println("ERR stdin closed before the start")
		return 1
	}
	for i := 0; i < n; i++ {
		if err := Increment(ctx, e, db, who, marker); err != nil {
			fmt.Printf("ERR increment %d: %v\n", i, err)
			return 1
		}
	}
	fmt.Println("done")
	return 0
}

// Increment makes one increment of the counter under the lease of
// (Scope, Lane), as cleolease's driver makes a write: it acquires the lane
// (confirming a grant by datagram inside its own BEGIN IMMEDIATE), checks
// the fence right after BEGIN IMMEDIATE (Hold.FenceBegin), reads the
// counter, writes it back plus one and logs (who, epoch, value read),
// checks the fence again and hands the lane on inside the commit when
// another process waits (Fencing.Pass), commits and releases.
//
// While it holds the lane it keeps the file marker, created exclusively
// (O_EXCL) after the grant and removed before COMMIT: a grant made while
// another process held the lane finds the marker there and fails. The
// application's connection comes from db and must implement
// driver.ExecerContext and driver.QueryerContext.
func Increment(ctx context.Context, e *lease.Engine, db *sql.DB, who, marker string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		x, ok1 := dc.(driver.ExecerContext)
		q, ok2 := dc.(driver.QueryerContext)
		if !ok1 || !ok2 {
			return fmt.Errorf("%T lacks ExecContext or QueryContext", dc)
		}
		c := rawConn{x, q}
		h, err := e.Acquire(ctx, Scope, Lane, lease.AcquireOptions{Wait: time.Hour, Require: true, Confirm: c})
		if err != nil {
			return err
		}
		defer h.Release()
		m, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			c.Rollback()
			return fmt.Errorf("the grant of epoch %d is not exclusive: %w", h.Epoch(), err)
		}
		m.Close()
		marked := true
		unmark := func() error {
			if !marked {
				return nil
			}
			marked = false
			return os.Remove(marker)
		}
		defer unmark()
		if !h.Begun() {
			if err := c.BeginImmediate(ctx); err != nil {
				return err
			}
		}
		f, lost, err := h.FenceBegin(ctx, q)
		if err != nil || lost {
			c.Rollback()
			return fmt.Errorf("FenceBegin at epoch %d: lost %v, %v", h.Epoch(), lost, err)
		}
		n, err := queryInt(ctx, q, `SELECT n FROM counter WHERE id = 1`)
		if err == nil {
			_, err = x.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, []driver.NamedValue{{Ordinal: 1, Value: n + 1}})
		}
		if err == nil {
			_, err = x.ExecContext(ctx, `INSERT INTO log(who, epoch, seen) VALUES (?, ?, ?)`,
				[]driver.NamedValue{{Ordinal: 1, Value: who}, {Ordinal: 2, Value: h.Epoch()}, {Ordinal: 3, Value: n}})
		}
		if err == nil {
			err = f.Check(ctx, q, true)
		}
		var p *lease.Pass
		if err == nil {
			p, err = f.Pass(ctx, q)
		}
		if err == nil {
			err = unmark()
		}
		if err == nil {
			_, err = x.ExecContext(ctx, "COMMIT", nil)
		}
		if err != nil {
			c.Rollback()
			if p != nil {
				p.Failed()
			}
			return err
		}
		if p != nil {
			p.Committed()
		}
		f.Committed()
		return nil
	})
}

// rawConn is the application's driver connection as a lease.Confirmer.
type rawConn struct {
	driver.ExecerContext
	driver.QueryerContext
}

// BeginImmediate opens the write transaction, waiting in SQLite's busy
// handler (the connection's busy timeout).
func (c rawConn) BeginImmediate(ctx context.Context) error {
	_, err := c.ExecContext(ctx, "BEGIN IMMEDIATE", nil)
	return err
}

// Rollback ends the open transaction, if any.
func (c rawConn) Rollback() { c.ExecContext(context.Background(), "ROLLBACK", nil) }

// queryInt returns the integer in the first column of query's first row.
func queryInt(ctx context.Context, q driver.QueryerContext, query string) (int64, error) {
	rows, err := q.QueryContext(ctx, query, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			return 0, fmt.Errorf("%s: no row", query)
		}
		return 0, err
	}
	n, ok := dest[0].(int64)
	if !ok {
		return 0, fmt.Errorf("%s: got %T, want int64", query, dest[0])
	}
	return n, nil
}

// Verify checks, on db, the file the workers wrote, want increments in
// all: the counter is want, the log has want rows whose values read are
// 0 … want-1 (no update was lost or repeated), and in commit order the
// epochs never decrease and no epoch was written by two workers (no two
// grants shared an epoch). It returns how many distinct epochs the log
// holds, for the caller to check that the lane changed hands.
func Verify(ctx context.Context, db *sql.DB, want int) (epochs int, err error) {
	var n, rows, distinct, lo, hi int64
	err = db.QueryRowContext(ctx, `SELECT (SELECT n FROM counter WHERE id = 1), count(*), count(DISTINCT seen), coalesce(min(seen), -1), coalesce(max(seen), -1) FROM log`).
		Scan(&n, &rows, &distinct, &lo, &hi)
	if err != nil {
		return 0, err
	}
	if n != int64(want) || rows != int64(want) || distinct != int64(want) || (want > 0 && (lo != 0 || hi != int64(want-1))) {
		return 0, fmt.Errorf("counter %d, %d log rows, %d distinct values read in [%d, %d]; want %d, %d, %d in [0, %d]",
			n, rows, distinct, lo, hi, want, want, want, want-1)
	}
	r, err := db.QueryContext(ctx, `SELECT who, epoch FROM log ORDER BY id`)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	owner := map[int64]string{}
	last := int64(0)
	for r.Next() {
		var who string
		var epoch int64
		if err := r.Scan(&who, &epoch); err != nil {
			return 0, err
		}
		if epoch < last {
			return 0, fmt.Errorf("epoch %d (%s) committed after epoch %d", epoch, who, last)
		}
		if o, ok := owner[epoch]; ok && o != who {
			return 0, fmt.Errorf("epoch %d written by both %s and %s", epoch, o, who)
		}
		owner[epoch], last = who, epoch
	}
	if err := r.Err(); err != nil {
		return 0, err
	}
	if len(owner) == 0 && want > 0 {
		return 0, errors.New("no epochs logged")
	}
	return len(owner), nil
}
