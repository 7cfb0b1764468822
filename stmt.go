package cleolease

import (
	"context"
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"
)

// leaseStmt is a prepared statement under the lease rules: its Exec and
// Query route like the connection's, with the class judged once at
// Prepare (go-sqlite3 runs only the first statement of a prepared string).
// A statement prepared from empty or comment-only text runs as that text
// does through the connection (no rows, nothing affected), where
// go-sqlite3 v1.14.53 dereferences its NULL statement handle and crashes.
type leaseStmt struct {
	*sqlite3.SQLiteStmt
	lc *leaseConn
	k  class
}

var (
	_ driver.StmtExecContext  = (*leaseStmt)(nil)
	_ driver.StmtQueryContext = (*leaseStmt)(nil)
)

func (s *leaseStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if stmtEmpty(s.SQLiteStmt) {
		return emptyResult{}, nil // go-sqlite3 would crash (NULL statement)
	}
	k, leased, err := s.lc.route("", &s.k)
	if err != nil {
		return nil, err
	}
	run := func() (driver.Result, error) { return s.SQLiteStmt.ExecContext(ctx, args) }
	if !leased {
		return run()
	}
	return s.lc.leasedExec(ctx, k, run)
}

func (s *leaseStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if stmtEmpty(s.SQLiteStmt) {
		return &bufferedRows{}, nil // go-sqlite3 would crash (NULL statement)
	}
	k, leased, err := s.lc.route("", &s.k)
	if err != nil {
		return nil, err
	}
	run := func() (driver.Rows, error) { return s.SQLiteStmt.QueryContext(ctx, args) }
	if !leased {
		return run()
	}
	return s.lc.leasedQuery(ctx, k, run)
}

func (s *leaseStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *leaseStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

// emptyResult is go-sqlite3's result for a string with no statement in it:
// LastInsertId and RowsAffected both 0.
type emptyResult struct{}

func (emptyResult) LastInsertId() (int64, error) { return 0, nil }
func (emptyResult) RowsAffected() (int64, error) { return 0, nil }
