package core

import (
	"context"
	"database/sql/driver"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// leaseStmt is a prepared statement under the lease rules: its Exec and
// Query route like the connection's, with the class judged once at
// Prepare (go-sqlite3 runs only the first statement of a prepared string).
// A statement prepared from empty or comment-only text runs as that text
// does through the connection (no rows, nothing affected), where
// go-sqlite3 v1.14.53 dereferences its NULL statement handle and crashes.
type leaseStmt struct {
	driver.Stmt // the base's; it implements StmtExecContext and StmtQueryContext
	lc          *leaseConn
	k           class
	empty       bool // SQLite prepared nothing (sqlbase.StmtInfo.Empty)
	returning   bool // the text has a RETURNING clause and the base's Exec steps it once (see execReturning)
}

// execStepsOnce reports whether the base's Exec of a prepared statement
// that returns rows takes one step and leaves the statement active
// (go-sqlite3), so that Exec of a RETURNING statement must go through
// execReturning. modernc's and ncruces's Exec step such a statement to its
// end and reset it (modernc's stmt.exec; ncruces's Stmt.Exec), which a
// fenced COMMIT can follow; their Query takes no step or one, so
// execReturning would report changes() before the statement ran (ncruces:
// not run at all).
func execStepsOnce(b sqlbase.Base) bool { return b.Name() == "go-sqlite3" }

var (
	_ driver.StmtExecContext  = (*leaseStmt)(nil)
	_ driver.StmtQueryContext = (*leaseStmt)(nil)
)

func (s *leaseStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if s.empty {
		return result{}, nil // go-sqlite3 would crash (NULL statement)
	}
	k, leased, err := s.lc.route("", &s.k, len(args))
	if err != nil {
		return nil, err
	}
	run := func() (driver.Result, error) { return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args) }
	if !leased {
		return inTxGuarded(s.lc, run)
	}
	if s.returning && k.fenceable {
		run = func() (driver.Result, error) { return s.execReturning(ctx, args) }
	}
	return s.lc.leasedExec(ctx, k, run)
}

// execReturning is Exec of a statement with a RETURNING clause inside the
// driver's transaction. go-sqlite3's Exec takes one step and leaves such a
// statement active (until its next run or Close), which would make the
// driver's COMMIT fail with "SQL statements in progress". Here the step is
// taken through Query, the result read as go-sqlite3 reads it after that
// step (last_insert_rowid() and changes()), and the statement reset.
func (s *leaseStmt) execReturning(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids, err := s.lc.Conn.QueryContext(context.Background(), "SELECT last_insert_rowid(), changes()", nil)
	if err != nil {
		return nil, err
	}
	defer ids.Close()
	v := make([]driver.Value, 2)
	if err := ids.Next(v); err != nil {
		return nil, err
	}
	id, _ := v[0].(int64)
	n, _ := v[1].(int64)
	return result{id: id, n: n}, nil
}

func (s *leaseStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if s.empty {
		return &bufferedRows{}, nil // go-sqlite3 would crash (NULL statement)
	}
	k, leased, err := s.lc.route("", &s.k, len(args))
	if err != nil {
		return nil, err
	}
	run := func() (driver.Rows, error) { return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args) }
	if !leased {
		return inTxGuarded(s.lc, run)
	}
	return s.lc.leasedQuery(ctx, k, run)
}

func (s *leaseStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *leaseStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

// result is a driver.Result with go-sqlite3's values (both 0 for a string
// with no statement in it).
type result struct{ id, n int64 }

func (r result) LastInsertId() (int64, error) { return r.id, nil }
func (r result) RowsAffected() (int64, error) { return r.n, nil }
