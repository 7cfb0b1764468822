package sqlbase

import (
	"database/sql/driver"
)

// Conn is a base's connection as cleolease's driver uses it: the
// context-taking calls database/sql makes. go-sqlite3's, modernc's and
// ncruces's connections implement each of them.
type Conn interface {
	driver.Conn
	driver.ExecerContext
	driver.QueryerContext
	driver.ConnPrepareContext
	driver.ConnBeginTx
}

// StmtInfo is what SQLite says of the first statement it prepared from a
// string, without running it.
type StmtInfo struct {
	// Empty: SQLite prepared nothing (white space, ';' or comments only).
	Empty bool
	// ReadOnly is sqlite3_stmt_readonly: the statement writes nothing
	// (transaction control statements count as read-only).
	ReadOnly bool
	// Inputs is the statement's number of parameters
	// (sqlite3_bind_parameter_count).
	Inputs int
	// Tail is the rest of the string after the statement, unparsed.
	Tail string
	// Runs is how many statements the base runs of the string when it is
	// prepared as one statement (DescribeStmt): 1 for go-sqlite3, which
	// runs only the first; every non-empty statement for modernc. Empty,
	// ReadOnly and Inputs then describe them all. 0 counts as 1.
	Runs int
}

// Driver is what cleolease's driver needs of a base, beyond Base, to serve
// the application's connections. Its methods are safe for concurrent use;
// a Conn is used by one goroutine at a time, as database/sql uses it.
type Driver interface {
	Base
	// Open opens an application connection on dsn with the base's driver
	// as the application configured it (its connection hooks run). With
	// probe, readOnly reports whether SQLite opened the main database
	// read-only (sqlite3_db_readonly), asked so that no callback of the
	// application's (an authorizer its hook installs) sees the question.
	// Errors are the base's own, as it returns them.
	Open(dsn string, probe bool) (conn Conn, readOnly bool, err error)
	// Describe prepares the first statement of query on conn and describes
	// it, running nothing; a statement SQLite cannot prepare returns the
	// base's own error for it.
	Describe(conn Conn, query string) (StmtInfo, error)
	// DescribeStmt describes st, which conn's PrepareContext prepared from
	// query (what the base will run of it).
	DescribeStmt(conn Conn, st driver.Stmt, query string) StmtInfo
	// AutoCommit reports whether conn is outside any transaction
	// (sqlite3_get_autocommit).
	AutoCommit(conn Conn) bool
	// Hooked reports whether the application's connections may carry
	// callbacks of the application's (a connection hook that may register
	// an update hook, an authorizer, a trace), which must never see the
	// lease rows: cleolease then writes no lease row on them.
	Hooked() bool
}
