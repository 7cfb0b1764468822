package basetest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// CallbackLog records what an application's callbacks saw, in order.
type CallbackLog struct {
	mu  sync.Mutex
	log []string
}

// Add records s.
func (l *CallbackLog) Add(s string) {
	l.mu.Lock()
	l.log = append(l.log, s)
	l.mu.Unlock()
}

// Seen is what was recorded, space-separated.
func (l *CallbackLog) Seen() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.log, " ")
}

// Recovered runs f and returns the value it panicked with (nil: none).
func Recovered(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// rowQuerier is a *sql.DB, *sql.Conn or *sql.Tx.
type rowQuerier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// Counters reads changes(), total_changes() and last_insert_rowid() on q.
func Counters(t testing.TB, q rowQuerier) string {
	t.Helper()
	var a, b, c int64
	if err := q.QueryRowContext(context.Background(), `SELECT changes(), total_changes(), last_insert_rowid()`).Scan(&a, &b, &c); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("changes=%d total=%d rowid=%d", a, b, c)
}

// RawCallbacksRun is one side of the Raw-callbacks differential test
// (each base's TestRawCallbacksSeeWhatTheBaseShows): on db, where schema
// (which must create table t(who)) has run, it takes a connection,
// registers callbacks on it with register (given what sql.Conn.Raw
// passes), makes a lone write (its lane free) and a transaction that calls
// waiter while it is open (another process registers as a waiter there),
// and returns the counters after each and what the callbacks logged in l.
func RawCallbacksRun(t testing.TB, db *sql.DB, schema string, l *CallbackLog, register func(driverConn any) error, waiter func()) (counters, seen string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Exec(schema); err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(register); err != nil {
		t.Fatal(err)
	}
	var out []string
	if _, err := c.ExecContext(ctx, `INSERT INTO t VALUES ('lone')`); err != nil {
		t.Fatalf("lone write: %v", err)
	}
	out = append(out, Counters(t, c))
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO t VALUES ('parent')`); err != nil {
		t.Fatal(err)
	}
	waiter()
	out = append(out, Counters(t, tx))
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	out = append(out, Counters(t, c))
	return strings.Join(out, "; "), l.Seen()
}

// DriverQuery runs query through the driver's QueryerContext of one of
// db's connections (inside sql.Conn.Raw) and closes its rows. A panic in
// it goes on to the caller, and database/sql then discards that
// connection (Raw's contract), where a panic inside DB.Query would leave
// the connection taken for ever — and its database file open, which
// Windows refuses to remove.
func DriverQuery(ctx context.Context, db *sql.DB, query string, args ...driver.NamedValue) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		rows, err := dc.(driver.QueryerContext).QueryContext(ctx, query, args)
		if err != nil {
			return err
		}
		return rows.Close()
	})
}

// DriverPreparedExec prepares query on one of db's connections through
// the driver (inside sql.Conn.Raw), runs it with args and closes it; see
// DriverQuery: database/sql keeps a connection taken for ever after a
// panic in a Stmt's Exec.
func DriverPreparedExec(ctx context.Context, db *sql.DB, query string, args ...driver.NamedValue) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.(driver.StmtExecContext).ExecContext(ctx, args)
		return err
	})
}
