// Package difftest is the base-independent harness of cleolease's
// differential suite: the same calls run through a base's own driver
// (opened with the DSN cleolease uses, its default pragmas included) and
// through cleolease over that base, on twin files, and every result and
// every error is compared: the rows, the column types, RowsAffected and
// LastInsertId, SQLite's code, extended code, system errno and message
// (read with sqlbase.Code, so any linked base's error type), other errors'
// dynamic type and text, whether a context error is the context's error
// itself, and at the end the data of every table.
//
// It imports no base driver: the root module's tests run it over
// go-sqlite3, the modernc and ncruces modules' tests over theirs (issue
// 30: cleolease over modernc behaves as modernc, over ncruces as ncruces).
// The calls it generates avoid the README's "Differences from
// go-sqlite3", which hold for every base and have tests of their own;
// anything else that differs is a bug, unless the README lists it for that
// base ("Other bases").
package difftest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// Op is one call of a differential sequence.
type Op struct {
	Via  string // see Session.Run
	SQL  string
	Args []any
}

// Seq returns the Op of via, query and args.
func Seq(via, query string, args ...any) Op { return Op{Via: via, SQL: query, Args: args} }

func (o Op) String() string {
	return fmt.Sprintf("%s(%q, %s)", o.Via, o.SQL, FmtArgs(o.Args))
}

// FmtArgs renders values with their types (FmtValue).
func FmtArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = FmtValue(a)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// FmtValue renders a value with its type, so that int64(1) and "1" differ.
func FmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case time.Time:
		return "time:" + x.Format(time.RFC3339Nano) + "@" + x.Location().String()
	case []byte:
		if x == nil {
			return "[]byte(nil)"
		}
		return fmt.Sprintf("[]byte%q", x)
	case sql.NamedArg:
		return fmt.Sprintf("named(%s=%s)", x.Name, FmtValue(x.Value))
	case *any:
		return FmtValue(*x)
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// FmtErr renders an error as the differential comparison sees it: its
// dynamic type (so that a wrapped SQLite error differs from a bare one)
// and, for an SQLite error of any linked base (sqlbase.Code), its code,
// extended code, system errno and message, the type of the base's error
// value when it is wrapped, and the whole error's text when it says more
// than the message; for an error of an ended context, whether it is
// ctx.Err() itself; else its text.
func FmtErr(ctx context.Context, err error) string {
	if err == nil {
		return "ok"
	}
	if c, ok := sqlbase.Code(err); ok {
		s := fmt.Sprintf("%T sqlite(%d/%d/errno %d): %s", err, c.Code, c.Extended, int(c.Errno), c.Message)
		if inner := fmt.Sprintf("%T", c.Err); inner != fmt.Sprintf("%T", err) {
			s += " (wrapping " + inner + ")"
		}
		if text := err.Error(); text != c.Message {
			s += fmt.Sprintf(" (text %q)", text)
		}
		return s
	}
	if ctx.Err() != nil {
		return fmt.Sprintf("%T ctx(identical=%v): %v", err, err == ctx.Err(), err)
	}
	return fmt.Sprintf("%T error: %s", err, err)
}

// Session holds the pool of one side of a sequence and its open
// transaction or connection. Its zero value with DB set is ready.
type Session struct {
	DB   *sql.DB
	tx   *sql.Tx
	conn *sql.Conn
}

type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// DeadlineOpAfter is the context deadline of the deadline- ops. It must
// pass once the statement is running: go-sqlite3 interrupts a statement
// whose context ends with one sqlite3_interrupt, made while its own
// goroutine starts the statement (sqlite3.go: "this is still racy"), and
// SQLite forgets an interrupt made before a connection's first running
// statement begins, so a deadline that passes first leaves the statement
// (a billion-row CTE) to run to its end. Under Wine on a loaded 2-vCPU
// machine a goroutine waited longer than 30 ms to run (the whole Windows
// suite hung there twice on 2026-12-02, inside sqlite3_step), and through
// cleolease the lease and BEGIN IMMEDIATE come before the statement; so
// 250 ms everywhere: a guard against that race, not a fix of it.
var DeadlineOpAfter = 250 * time.Millisecond

// Run performs one call and describes its outcome in one string. The
// calls (Op.Via):
//
//   - exec, query, queryrow, prepare-exec, prepare-query: on the *sql.DB,
//     or on the open transaction or connection when there is one;
//   - begin, commit, rollback: a transaction (begin-ro: ReadOnly,
//     begin-rc: isolation level ReadCommitted); conn, close: a *sql.Conn;
//   - ping: db.PingContext;
//   - cancelled-exec, cancelled-query, cancelled-begin: with a context
//     that is already cancelled; deadline-exec, deadline-query: with a
//     context that expires while the statement runs.
func (s *Session) Run(o Op) string {
	ctx := context.Background()
	var q queryer = s.DB
	if s.tx != nil {
		q = s.tx
	} else if s.conn != nil {
		q = s.conn
	}
	via := o.Via
	if strings.HasPrefix(via, "cancelled-") {
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
		via = strings.TrimPrefix(via, "cancelled-")
	}
	if via == "deadline-query" {
		return deadlineQuery(q, o)
	}
	if strings.HasPrefix(via, "deadline-") {
		// For statements that run far longer than the deadline: the
		// outcome, not the time, is compared.
		c, cancel := context.WithTimeout(ctx, DeadlineOpAfter)
		defer cancel()
		ctx = c
		via = strings.TrimPrefix(via, "deadline-")
	}
	switch via {
	case "exec":
		res, err := q.ExecContext(ctx, o.SQL, o.Args...)
		return FmtResult(ctx, res, err)
	case "query":
		rows, err := q.QueryContext(ctx, o.SQL, o.Args...)
		return FmtRows(ctx, rows, err)
	case "queryrow":
		row := q.QueryRowContext(ctx, o.SQL, o.Args...)
		var a, b any
		err := row.Scan(&a, &b)
		if err != nil && strings.HasPrefix(err.Error(), "sql: expected") {
			err = row.Scan(&a) // one column
			b = "-"
		}
		return fmt.Sprintf("row %s %s: %s", FmtValue(a), FmtValue(b), FmtErr(ctx, err))
	case "prepare-exec", "prepare-query":
		st, err := q.PrepareContext(ctx, o.SQL)
		if err != nil {
			return "prepare: " + FmtErr(ctx, err)
		}
		defer st.Close()
		if via == "prepare-exec" {
			res, err := st.ExecContext(ctx, o.Args...)
			return FmtResult(ctx, res, err)
		}
		rows, err := st.QueryContext(ctx, o.Args...)
		return FmtRows(ctx, rows, err)
	case "begin", "begin-ro", "begin-rc":
		var opts *sql.TxOptions
		switch via {
		case "begin-ro":
			opts = &sql.TxOptions{ReadOnly: true}
		case "begin-rc":
			opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
		}
		tx, err := s.DB.BeginTx(ctx, opts)
		if err == nil {
			s.tx = tx
		}
		return via + ": " + FmtErr(ctx, err)
	case "commit", "rollback":
		if s.tx == nil {
			return "no tx"
		}
		var err error
		if via == "commit" {
			err = s.tx.Commit()
		} else {
			err = s.tx.Rollback()
		}
		s.tx = nil
		return via + ": " + FmtErr(ctx, err)
	case "ping":
		return "ping: " + FmtErr(ctx, s.DB.PingContext(ctx))
	case "conn":
		c, err := s.DB.Conn(ctx)
		if err == nil {
			s.conn = c
		}
		return "conn: " + FmtErr(ctx, err)
	case "close":
		if s.conn == nil {
			return "no conn"
		}
		err := s.conn.Close()
		s.conn = nil
		return "close: " + FmtErr(ctx, err)
	}
	panic("unknown op " + o.Via)
}

// FmtResult describes an Exec's outcome: its error, or LastInsertId and
// RowsAffected with their errors.
func FmtResult(ctx context.Context, res sql.Result, err error) string {
	if err != nil {
		return "exec: " + FmtErr(ctx, err)
	}
	id, err1 := call(res.LastInsertId)
	n, err2 := call(res.RowsAffected)
	return fmt.Sprintf("exec: id=%d (%s) n=%d (%s)", id, FmtErr(ctx, err1), n, FmtErr(ctx, err2))
}

// call returns f's results, or its panic as an error (database/sql's
// Result panics when a driver returned a nil driver.Result without an
// error: modernc does so for text with no statement).
func call(f func() (int64, error)) (n int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// FmtRows describes a Query's outcome: its error, or the columns, their
// types, every row (each value with its type), and the errors of
// rows.Err and rows.Close. It closes rows.
func FmtRows(ctx context.Context, rows *sql.Rows, err error) string {
	if err != nil {
		return "query: " + FmtErr(ctx, err)
	}
	defer rows.Close()
	var b strings.Builder
	cols, err := rows.Columns()
	fmt.Fprintf(&b, "query: cols=%q (%s)", cols, FmtErr(ctx, err))
	if cts, err := rows.ColumnTypes(); err == nil && len(cols) > 0 {
		for _, ct := range cts {
			nullable, ok := ct.Nullable()
			fmt.Fprintf(&b, " [%s %s %v %v/%v]", ct.Name(), ct.DatabaseTypeName(), ct.ScanType(), nullable, ok)
		}
	}
	for rows.Next() {
		dest := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range dest {
			ptrs[i] = &dest[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			fmt.Fprintf(&b, " scan:%s", FmtErr(ctx, err))
			continue
		}
		b.WriteString(" " + FmtArgs(dest))
	}
	fmt.Fprintf(&b, " err=%s close=%s", FmtErr(ctx, rows.Err()), FmtErr(ctx, rows.Close()))
	return b.String()
}

// deadlineQuery runs o as a query whose context's deadline passes while
// the statement runs, and describes where it failed (at Query, or at the
// rows) and how many rows came before. Which of two errors the rows then
// report is database/sql's race, not the driver's: SQLite's interrupt,
// when Next meets it first, or the context's error, when database/sql's
// watcher of the context closes the rows first (it does as soon as the
// context ends). Through cleolease a write's rows are read to the end
// inside Query (core's bufferedRows), so the context has always ended by
// the first Next and the watcher often wins; over ncruces alone the
// interrupt usually comes first. Both say "ended by its deadline".
func deadlineQuery(q queryer, o Op) string {
	ctx, cancel := context.WithTimeout(context.Background(), DeadlineOpAfter)
	defer cancel()
	rows, err := q.QueryContext(ctx, o.SQL, o.Args...)
	if err != nil {
		return "query: " + deadlineErr(ctx, err)
	}
	defer rows.Close()
	// (No Columns: once the watcher closed the rows they report the
	// context's error there too.)
	n := 0
	for rows.Next() {
		n++
	}
	return fmt.Sprintf("query: rows=%d err=%s close=%s", n,
		deadlineErr(ctx, rows.Err()), FmtErr(ctx, rows.Close()))
}

// deadlineErr describes err, naming SQLite's interrupt and the context's
// deadline alike.
func deadlineErr(ctx context.Context, err error) string {
	if c, ok := sqlbase.Code(err); (ok && c.Code == sqlbase.Interrupt) || errors.Is(err, context.DeadlineExceeded) {
		return "ended by its deadline"
	}
	return FmtErr(ctx, err)
}

// End closes whatever a sequence left open, so every sequence ends in the
// same state: an open transaction is rolled back.
func (s *Session) End() {
	if s.tx != nil {
		s.tx.Rollback()
		s.tx = nil
	}
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// DumpTables describes every table but the lease's own, and user_version.
func DumpTables(t testing.TB, db *sql.DB) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' AND name NOT LIKE '\_writer%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	var uv int64
	db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&uv)
	fmt.Fprintf(&b, "user_version=%d\n", uv)
	for _, n := range names {
		fmt.Fprintf(&b, "table %s:", n)
		rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT rowid, * FROM %q ORDER BY rowid`, n))
		b.WriteString(FmtRows(ctx, rows, err))
		b.WriteString("\n")
	}
	return b.String()
}

// Schema is the schema every differential sequence starts from.
const Schema = `CREATE TABLE t(a INTEGER UNIQUE, b TEXT, c BLOB, d DATETIME, e REAL);
CREATE TABLE p(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE ch(pid INTEGER REFERENCES p(id), note TEXT)`

// RunOn creates Schema through both pools (raw: the base's own driver;
// cl: cleolease over it), runs ops through both, and fails t at the first
// call whose outcome differs, and when the data differs at the end.
func RunOn(t testing.TB, raw, cl *sql.DB, ops []Op) {
	t.Helper()
	sr, sc := &Session{DB: raw}, &Session{DB: cl}
	for _, s := range []*Session{sr, sc} {
		if got := s.Run(Op{Via: "exec", SQL: Schema}); !strings.HasPrefix(got, "exec: id=") {
			t.Fatalf("schema: %s", got)
		}
	}
	log := CompareOps(t, sr, sc, ops)
	if want, got := DumpTables(t, raw), DumpTables(t, cl); want != got {
		t.Fatalf("data differs after the sequence\n raw base:\n%s\n cleolease:\n%s\nsequence:\n%s", want, got, strings.Join(log, "\n"))
	}
}

// CompareOps runs ops through both sessions (sr: the base's own driver;
// sc: cleolease), fails t at the first call whose outcome differs, ends
// both sessions and returns the transcript.
func CompareOps(t testing.TB, sr, sc *Session, ops []Op) []string {
	t.Helper()
	var log []string
	for i, o := range ops {
		want, got := sr.Run(o), sc.Run(o)
		log = append(log, fmt.Sprintf("%d %v\n    %s", i, o, want))
		if want != got {
			sr.End()
			sc.End()
			t.Fatalf("call %d differs: %v\n raw base:  %s\n cleolease: %s\nsequence so far:\n%s", i, o, want, got, strings.Join(log, "\n"))
		}
	}
	sr.End()
	sc.End()
	return log
}
