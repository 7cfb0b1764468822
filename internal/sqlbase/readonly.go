package sqlbase

import (
	"context"
	"database/sql/driver"
	"slices"
)

// OpenedReadOnly reports whether SQLite opened the main database of conn
// read-only: what sqlite3_db_readonly(db, "main") answers, asked of SQLite
// in SQL, for a base that does not export that function. SQLite compiles
// BEGIN IMMEDIATE (sqlite3BeginTransaction) into one OP_Transaction per
// database whose p2 is 0, a read transaction, exactly when
// sqlite3BtreeIsReadonly — the function sqlite3_db_readonly returns — is
// true, and 1 otherwise; EXPLAIN returns that program without running it,
// writing and locking nothing. EXPLAIN's listing is not a stable
// interface, so each base's tests pin both answers on the SQLite it
// bundles; a listing without the main database's Transaction opcode (a
// SQLite that compiled BEGIN otherwise, an authorizer that denies it)
// answers false, the writable path cleolease takes for every file it can
// write.
func OpenedReadOnly(conn driver.QueryerContext) bool {
	rows, err := conn.QueryContext(context.Background(), "EXPLAIN BEGIN IMMEDIATE", nil)
	if err != nil {
		return false
	}
	defer rows.Close()
	cols := rows.Columns()
	op, p1, p2 := slices.Index(cols, "opcode"), slices.Index(cols, "p1"), slices.Index(cols, "p2")
	if op < 0 || p1 < 0 || p2 < 0 {
		return false
	}
	v := make([]driver.Value, len(cols))
	for {
		if err := rows.Next(v); err != nil {
			return false // io.EOF included: no Transaction opcode for main
		}
		name, _ := v[op].(string)
		db, _ := v[p1].(int64)
		if name == "Transaction" && db == 0 {
			wr, ok := v[p2].(int64)
			return ok && wr == 0
		}
	}
}
