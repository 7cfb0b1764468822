package base

// ncruces's database/sql connection leaves two calls to database/sql: it
// has no QueryContext, and its ExecContext answers driver.ErrSkip when
// given arguments (driver.go in ncruces's package driver); database/sql
// then prepares the statement, runs it and closes it. cleolease's driver
// calls its base's connection directly, so Conn makes those two calls the
// way database/sql's fallback would (sql.go, queryDC and execDC;
// convert.go, driverArgsConnLocked): the same statement, the same argument
// conversion, the same errors.

import (
	"context"
	"database/sql/driver"
	"fmt"
	"reflect"
	"strings"

	"github.com/ncruces/go-sqlite3"
	ncdriver "github.com/ncruces/go-sqlite3/driver"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// Conn is one connection of ncruces's driver with the context-taking calls
// cleolease's driver needs (sqlbase.Conn). Raw returns ncruces's
// *sqlite3.Conn; Unwrap ncruces's own driver connection.
type Conn struct {
	ncdriver.Conn
	exec    driver.ExecerContext     // ncruces's ExecContext
	checker driver.NamedValueChecker // ncruces's CheckNamedValue; nil when it has none
}

var _ sqlbase.Conn = (*Conn)(nil)

// wrap returns dc, a connection of ncruces's driver, as a Conn.
func wrap(dc driver.Conn) *Conn {
	nc := dc.(ncdriver.Conn) // ncruces's connector returns its conn, which implements it
	c := &Conn{Conn: nc, exec: dc.(driver.ExecerContext)}
	c.checker, _ = dc.(driver.NamedValueChecker)
	return c
}

// Unwrap returns ncruces's own driver connection.
func (c *Conn) Unwrap() ncdriver.Conn { return c.Conn }

// CheckNamedValue is ncruces's connection's: it accepts every value as it
// is (the statement's check, which runs when the statement is bound,
// converts them).
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c.checker == nil {
		return driver.ErrSkip
	}
	return c.checker.CheckNamedValue(nv)
}

// ExecContext runs query with ncruces's ExecContext when there are no
// arguments (sqlite3_exec: every statement of the string runs). With
// arguments it prepares query (one statement: ncruces refuses a tail),
// binds them and runs it, as database/sql would.
//
// ncruces's ExecContext sets last_insert_rowid() to 0 before it runs the
// text (so that its Result reports 0 after a statement that inserts
// nothing), while ncruces's own BEGIN, COMMIT and ROLLBACK run on the
// connection directly and leave it alone. The statements cleolease's core
// runs for itself on the application's connection (ownStatement) stand in
// for those: they keep last_insert_rowid() as the application's last
// INSERT left it (else an autocommit INSERT's fenced COMMIT would zero it).
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) == 0 {
		if !ownStatement(query) {
			return c.exec.ExecContext(ctx, query, args)
		}
		raw := c.Raw()
		id := raw.LastInsertRowID()
		defer raw.SetLastInsertRowID(id)
		return c.exec.ExecContext(ctx, query, args)
	}
	st, args, err := c.prepareBound(ctx, query, args)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.(driver.StmtExecContext).ExecContext(ctx, args)
}

// ownStatement reports a text cleolease's core runs on the application's
// connection for itself, as it writes it (internal/core's tx.go and
// write.go): its transactions' BEGIN, BEGIN IMMEDIATE, COMMIT and ROLLBACK,
// a read-only transaction's PRAGMA query_only and the busy timeout it
// lowers and restores while claiming the write lock. The application's
// same text, byte for byte, is taken for the core's: it then keeps
// last_insert_rowid() where ncruces alone would zero it.
func ownStatement(query string) bool {
	switch query {
	case "BEGIN", "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK":
		return true
	}
	return strings.HasPrefix(query, "PRAGMA query_only = ") || strings.HasPrefix(query, "PRAGMA busy_timeout = ")
}

// QueryContext prepares query (one statement), binds args and runs it, as
// database/sql does for a driver without QueryContext; closing the rows
// closes the statement.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, args, err := c.prepareBound(ctx, query, args)
	if err != nil {
		return nil, err
	}
	r, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &rows{Rows: r, st: st}, nil
}

// prepareBound prepares query and converts args for it as database/sql
// does for a prepared statement: the count checked against NumInput
// ("sql: expected 1 arguments, got 2"), each value through the statement's
// CheckNamedValue, or database/sql's default conversion where that skips.
func (c *Conn) prepareBound(ctx context.Context, query string, args []driver.NamedValue) (driver.Stmt, []driver.NamedValue, error) {
	st, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	if want := st.NumInput(); want != -1 && want != len(args) {
		st.Close()
		return nil, nil, fmt.Errorf("sql: expected %d arguments, got %d", want, len(args))
	}
	out := make([]driver.NamedValue, len(args))
	copy(out, args)
	check, _ := st.(driver.NamedValueChecker)
	for i := range out {
		nv := &out[i]
		err := driver.ErrSkip
		if check != nil {
			err = check.CheckNamedValue(nv)
		}
		if err == driver.ErrSkip {
			nv.Value, err = driver.DefaultParameterConverter.ConvertValue(nv.Value)
		}
		if err != nil {
			st.Close()
			return nil, nil, fmt.Errorf("sql: converting argument %s type: %w", describeNamedValue(nv), err)
		}
	}
	return st, out, nil
}

// describeNamedValue names an argument as database/sql's errors do.
func describeNamedValue(nv *driver.NamedValue) string {
	if len(nv.Name) == 0 {
		return fmt.Sprintf("$%d", nv.Ordinal)
	}
	return fmt.Sprintf("with name %q", nv.Name)
}

// PrepareContext prepares query with ncruces (one statement: a string
// with a second one is its error "sqlite3: multiple statements") and
// returns ncruces's statement as a Stmt.
func (c *Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &Stmt{st}, nil
}

// Prepare is PrepareContext without a context.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Raw returns ncruces's connection handle.
func (c *Conn) Raw() *sqlite3.Conn { return c.Conn.Raw() }

// rows are ncruces's rows of a statement that closes with them. They
// report column types as ncruces's rows do.
type rows struct {
	driver.Rows
	st driver.Stmt
}

var (
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
)

// Close closes the rows, then their statement.
func (r *rows) Close() error {
	err := r.Rows.Close()
	if cerr := r.st.Close(); err == nil {
		err = cerr
	}
	return err
}

// ColumnTypeDatabaseTypeName is ncruces's, "" where its rows have none.
func (r *rows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// ColumnTypeNullable is ncruces's; ok is false where its rows have none.
func (r *rows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

// ColumnTypeScanType is ncruces's; any where its rows have none.
func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

// Stmt is ncruces's prepared statement whose rows can be read at once:
// ncruces's rows record their column count in Columns, which database/sql
// always calls before Next but cleolease's own reads need not, so Query
// and QueryContext call it before returning the rows.
type Stmt struct {
	driver.Stmt // ncruces's
}

var (
	_ driver.StmtExecContext   = (*Stmt)(nil)
	_ driver.StmtQueryContext  = (*Stmt)(nil)
	_ driver.NamedValueChecker = (*Stmt)(nil)
)

// Unwrap returns ncruces's statement.
func (s *Stmt) Unwrap() driver.Stmt { return s.Stmt }

// ExecContext is ncruces's.
func (s *Stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

// QueryContext is ncruces's, its rows' Columns asked.
func (s *Stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	r.Columns()
	return r, nil
}

// Query is ncruces's, its rows' Columns asked.
func (s *Stmt) Query(args []driver.Value) (driver.Rows, error) {
	r, err := s.Stmt.Query(args) //nolint:staticcheck // the pre-context call, passed on
	if err != nil {
		return nil, err
	}
	r.Columns()
	return r, nil
}

// CheckNamedValue is ncruces's statement's check (the values it binds as
// they are), driver.ErrSkip for the others (database/sql's default
// conversion).
func (s *Stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
