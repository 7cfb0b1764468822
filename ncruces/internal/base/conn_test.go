package base_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

// valuer is a driver.Valuer, as database/sql converts them.
type valuer struct{ s string }

func (v valuer) Value() (driver.Value, error) { return "v:" + v.s, nil }

// namedArgs converts args as database/sql does before it calls a
// driver's ExecContext or QueryContext (sql.Named to a named value,
// ordinals from 1), without converting the values.
func namedArgs(args ...any) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		if n, ok := a.(sql.NamedArg); ok {
			nv[i].Name, nv[i].Value = n.Name, n.Value
		}
	}
	return nv
}

// twins returns the base's connection and ncruces alone through
// database/sql, both on a new file holding t(a INTEGER, b VARCHAR(10) NOT
// NULL, c).
func twins(t *testing.T) (*base.Conn, *sql.DB) {
	t.Helper()
	p := filepath.Join(testdir.New(t), "d.db")
	c := openConn(t, base.For(nil), "file:"+p)
	execNoArgs(t, c, "CREATE TABLE t(a INTEGER, b VARCHAR(10) NOT NULL DEFAULT '', c)")
	return c.(*base.Conn), openDB(t, "file:"+p)
}

// Conn's ExecContext with arguments runs as database/sql runs ncruces's
// (which answers driver.ErrSkip to them): the values converted the same
// (an int32, a driver.Valuer, a named argument), the same errors for a
// wrong argument count or a value database/sql cannot convert.
func TestConnExecWithArgs(t *testing.T) {
	ctx := context.Background()
	c, db := twins(t)
	args := []any{int32(7), valuer{"x"}, sql.Named("n", []byte("blob"))}
	const insert = "INSERT INTO t(a, b, c) VALUES (?, ?, :n)"
	res, err := c.ExecContext(ctx, insert, namedArgs(args...))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Errorf("RowsAffected = %d, %v", n, err)
	}
	if id, err := res.LastInsertId(); err != nil || id != 1 {
		t.Errorf("LastInsertId = %d, %v", id, err)
	}
	if _, err := db.ExecContext(ctx, insert, args...); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, "SELECT a, typeof(a), b, typeof(b), c, typeof(c) FROM t ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	var got [][6]any
	for rows.Next() {
		var r [6]any
		if err := rows.Scan(&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	want := [6]any{int64(7), "integer", "v:x", "text", []byte("blob"), "blob"}
	if len(got) != 2 || !reflect.DeepEqual(got[0], want) || !reflect.DeepEqual(got[1], want) {
		t.Fatalf("rows (the base's, then database/sql's) %v; want %v twice", got, want)
	}

	// The errors are database/sql's own, word for word.
	for _, tc := range []struct {
		query string
		args  []any
	}{
		{"INSERT INTO t(a) VALUES (?)", []any{1, 2}},
		{"INSERT INTO t(a, b) VALUES (?, ?)", []any{1}},
		{"INSERT INTO t(a) VALUES (?)", []any{struct{}{}}},
		{"INSERT INTO t(a) VALUES (:x)", []any{sql.Named("x", make(chan int))}},
		{"INSERT INTO t(a) VALUES (?); INSERT INTO t(a) VALUES (?)", []any{1, 2}},
		{"INSERT INTO nope VALUES (?)", []any{1}},
	} {
		_, err := c.ExecContext(ctx, tc.query, namedArgs(tc.args...))
		_, want := db.ExecContext(ctx, tc.query, tc.args...)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("ExecContext(%q, %v): %v; database/sql over ncruces: %v", tc.query, tc.args, err, want)
		}
	}
	_, err = c.ExecContext(ctx, "INSERT INTO t(a) VALUES (?)", namedArgs(1, 2))
	if err == nil || err.Error() != "sql: expected 1 arguments, got 2" {
		t.Errorf("a wrong argument count: %v", err)
	}

	// Without arguments, every statement of the string runs
	// (sqlite3_exec), as ncruces's own ExecContext does.
	if _, err := c.ExecContext(ctx, "INSERT INTO t(a) VALUES (1); INSERT INTO t(a) VALUES (2)", nil); err != nil {
		t.Fatal(err)
	}
	if n := queryValue(t, c, "SELECT count(*) FROM t"); n != int64(4) {
		t.Errorf("%v rows, want 4", n)
	}
	// Its CheckNamedValue lets every value through to the statement's.
	if err := c.CheckNamedValue(&driver.NamedValue{Value: struct{}{}}); err != nil {
		t.Errorf("CheckNamedValue: %v", err)
	}
}

// Conn's QueryContext prepares, binds and runs as database/sql does over
// ncruces: its rows can be read at once (without Columns first, which
// ncruces's rows need before Next), report the column types ncruces's
// report, and closing them closes the statement.
func TestConnQuery(t *testing.T) {
	ctx := context.Background()
	c, db := twins(t)
	execNoArgs(t, c, "INSERT INTO t VALUES (1, 'one', 1.5), (2, 'two', NULL)")
	const query = "SELECT a, b, c, a + 1 FROM t WHERE a >= ? ORDER BY a"
	rows, err := c.QueryContext(ctx, query, namedArgs(int32(1)))
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, 4)
	if err := rows.Next(dest); err != nil { // Columns not asked
		t.Fatal(err)
	}
	if want := []driver.Value{int64(1), "one", 1.5, int64(2)}; !reflect.DeepEqual(dest, want) {
		t.Errorf("first row %v, want %v", dest, want)
	}
	if cols := rows.Columns(); !reflect.DeepEqual(cols, []string{"a", "b", "c", "a + 1"}) {
		t.Errorf("Columns %q", cols)
	}
	twin, err := db.QueryContext(ctx, query, int32(1))
	if err != nil {
		t.Fatal(err)
	}
	defer twin.Close()
	if !twin.Next() {
		t.Fatal(twin.Err())
	}
	types, err := twin.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	for i, ct := range types {
		name := rows.(driver.RowsColumnTypeDatabaseTypeName).ColumnTypeDatabaseTypeName(i)
		nullable, nok := rows.(driver.RowsColumnTypeNullable).ColumnTypeNullable(i)
		scan := rows.(driver.RowsColumnTypeScanType).ColumnTypeScanType(i)
		wantNullable, wantNok := ct.Nullable()
		if name != ct.DatabaseTypeName() || nullable != wantNullable || nok != wantNok || scan != ct.ScanType() {
			t.Errorf("column %d: %q, nullable %v %v, scan %v; ncruces's %q, %v %v, %v",
				i, name, nullable, nok, scan, ct.DatabaseTypeName(), wantNullable, wantNok, ct.ScanType())
		}
	}
	if got := rows.(driver.RowsColumnTypeDatabaseTypeName).ColumnTypeDatabaseTypeName(1); got != "VARCHAR" {
		t.Errorf("b's type %q, want VARCHAR", got)
	}
	if err := rows.Next(dest); err != nil {
		t.Fatal(err)
	}
	if err := rows.Next(dest); err != io.EOF {
		t.Errorf("after the last row: %v, want io.EOF", err)
	}
	twin.Close()

	// Closing the rows finalized their statement: ncruces's handle closes
	// (sqlite3_close refuses while a statement is left). A statement left
	// open shows it.
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	left, _, err := c.Unwrap().Raw().Prepare("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Raw().Close(); err == nil {
		t.Fatal("ncruces closed a connection with a statement left: this test cannot tell")
	}
	left.Close()
	if err := c.Raw().Close(); err != nil {
		t.Fatalf("closing the connection after the rows closed: %v (a statement left)", err)
	}

	// The errors are database/sql's over ncruces.
	c, db = twins(t)
	for _, tc := range []struct {
		query string
		args  []any
	}{
		{"SELECT ?", []any{1, 2}},
		{"SELECT * FROM nope", nil},
		{"SELECT 1; SELECT 2", nil},
		{"SELECT ?", []any{struct{}{}}},
	} {
		_, err := c.QueryContext(ctx, tc.query, namedArgs(tc.args...))
		_, want := db.QueryContext(ctx, tc.query, tc.args...)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("QueryContext(%q, %v): %v; database/sql over ncruces: %v", tc.query, tc.args, err, want)
		}
	}
}

// Statements prepared on Conn are ncruces's whose rows can be read at
// once, through the context-taking call and the old one.
func TestConnStmt(t *testing.T) {
	ctx := context.Background()
	c, _ := twins(t)
	execNoArgs(t, c, "INSERT INTO t VALUES (1, 'one', NULL)")
	st, err := c.PrepareContext(ctx, "SELECT b FROM t WHERE a = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := st.NumInput(); n != 1 {
		t.Errorf("NumInput %d", n)
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, namedArgs(int64(1)))
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil || dest[0] != "one" {
		t.Fatalf("QueryContext's row %v, %v", dest, err)
	}
	rows.Close()
	rows, err = st.Query([]driver.Value{int64(1)}) //nolint:staticcheck // the pre-context call
	if err != nil {
		t.Fatal(err)
	}
	if err := rows.Next(dest); err != nil || dest[0] != "one" {
		t.Fatalf("Query's row %v, %v", dest, err)
	}
	rows.Close()
	if _, err := st.(driver.StmtExecContext).ExecContext(ctx, namedArgs(int64(1))); err != nil {
		t.Fatal(err)
	}
	check := st.(driver.NamedValueChecker)
	if err := check.CheckNamedValue(&driver.NamedValue{Value: int64(1)}); err != nil {
		t.Errorf("CheckNamedValue(int64): %v", err)
	}
	if err := check.CheckNamedValue(&driver.NamedValue{Value: int32(1)}); !errors.Is(err, driver.ErrSkip) {
		t.Errorf("CheckNamedValue(int32): %v, want driver.ErrSkip (database/sql's conversion)", err)
	}
	p, err := c.Prepare("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*base.Stmt); !ok {
		t.Errorf("Prepare returned %T", p)
	}
	p.Close()
}
