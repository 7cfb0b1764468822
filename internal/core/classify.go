package core

import (
	"context"
	"database/sql/driver"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// class is what SQLite says of a statement string.
type class struct {
	write     bool  // may write: some statement is not sqlite3_stmt_readonly
	fenceable bool  // may run inside the driver's BEGIN IMMEDIATE … COMMIT
	refuse    error // the string must not run (nor be prepared) on a leased connection
	inputs    int   // parameters of the first statement (go-sqlite3 checks them first)
}

// unfenced are statements that cannot run inside a transaction or manage
// their own: they are leased but not fenced (README "What is fenced").
var unfenced = map[string]bool{
	"BEGIN": true, "COMMIT": true, "END": true, "ROLLBACK": true, "SAVEPOINT": true, "RELEASE": true,
	"VACUUM": true, "PRAGMA": true, "ATTACH": true, "DETACH": true,
}

// classify judges query by preparing each of its statements with SQLite,
// without running any. Results are cached per connection by query text.
//
//   - Empty, white-space and comment-only statements count for nothing, so
//     "SELECT 1; -- note" is one read statement.
//   - A string of one statement is fenceable unless its keyword is in
//     unfenced.
//   - A string of several statements is a write if any of them may write,
//     and is never fenced (a later statement may manage its own
//     transaction). When a later statement cannot be prepared before the
//     earlier ones run (it may name a table they create), the string counts
//     as a write.
//
// An error preparing the first statement is SQLite's own, the same that
// go-sqlite3 returns for the string, and is not cached.
func (lc *leaseConn) classify(query string) (class, error) {
	if k, ok := lc.classes[query]; ok {
		return k, nil
	}
	k, err := classifySQL(lc.c.drvBase, lc.Conn, query)
	if err != nil {
		return class{}, err
	}
	if lc.classes == nil || len(lc.classes) > 512 {
		lc.classes = map[string]class{}
	}
	lc.classes[query] = k
	return k, nil
}

// stmtClass judges a statement prepared from query, described by info:
// a base runs only the first statement of a prepared string. Results are cached per
// connection by query text, like classify's, so that code preparing the
// same write again and again pays the judgement (an EXPLAIN, on a
// connection with TEMP objects or attached databases) once.
func (lc *leaseConn) stmtClass(query string, info sqlbase.StmtInfo) class {
	if k, ok := lc.stmtClasses[query]; ok {
		return k
	}
	k := class{write: !info.Empty && !info.ReadOnly, fenceable: !unfenced[firstKeyword(query)] && info.Runs <= 1}
	if k.write && k.fenceable && lc.leased() && !writesMain(lc.Conn, query[:len(query)-len(info.Tail)]) {
		k.write = false // TEMP or an attached database only (see classifySQL)
	}
	if lc.stmtClasses == nil || len(lc.stmtClasses) > 512 {
		lc.stmtClasses = map[string]class{}
	}
	lc.stmtClasses[query] = k
	return k
}

func classifySQL(base sqlbase.Driver, sc sqlbase.Conn, query string) (class, error) {
	if refusesLocking(query) {
		return class{refuse: ErrExclusiveLocking}, nil
	}
	var k class
	n := 0      // statements that are not empty
	first := "" // the text of the first of them
	for rest := query; rest != ""; {
		if n > 0 && prepareTimePragma(rest) {
			// SQLite applies many PRAGMAs while preparing them; a later
			// one that the base may never reach must not be prepared
			// here. Judge the string a write.
			return class{write: true, inputs: k.inputs}, nil
		}
		info, err := base.Describe(sc, rest)
		if err != nil {
			if n == 0 {
				return class{}, err
			}
			return class{write: true, inputs: k.inputs}, nil
		}
		tail := info.Tail
		if !info.Empty {
			n++
			if !info.ReadOnly {
				k.write = true
			}
			if n == 1 {
				first = rest[:len(rest)-len(tail)]
				k.fenceable = !unfenced[firstKeyword(first)]
				k.inputs = info.Inputs
			}
		}
		if len(tail) >= len(rest) {
			break // defensive: SQLite always consumes input
		}
		rest = tail
	}
	if n > 1 {
		k.fenceable = false
	}
	if n == 1 && k.write && k.fenceable && !writesMain(sc, first) {
		// It writes only TEMP or another attached database: the main
		// file's lease has nothing to order, and the base would not wait
		// for the main file's writer either.
		k.write = false
	}
	return k, nil
}

// hasOtherDatabases reports whether the connection has TEMP objects or an
// attached database (reads: they change nothing, changes() included). It
// names nothing a user's object can shadow: temp.sqlite_master, and the
// statement PRAGMA database_list rather than the table-valued
// pragma_database_list (a TEMP or main table of that name would stand in
// for it, hiding an attached database). When it cannot tell, the answer
// is yes.
func hasOtherDatabases(sc sqlbase.Conn) bool {
	ctx := context.Background()
	rows, err := sc.QueryContext(ctx, `SELECT EXISTS (SELECT 1 FROM temp.sqlite_master)`, nil)
	if err != nil {
		return true
	}
	v := make([]driver.Value, 1)
	err = rows.Next(v)
	rows.Close()
	if n, _ := v[0].(int64); err != nil || n != 0 {
		return true
	}
	rows, err = sc.QueryContext(ctx, "PRAGMA database_list", nil)
	if err != nil {
		return true
	}
	defer rows.Close()
	row := make([]driver.Value, len(rows.Columns())) // seq, name, file
	for {
		switch err := rows.Next(row); {
		case err == io.EOF:
			return false
		case err != nil || len(row) < 2:
			return true
		}
		switch name := row[1].(type) {
		case string:
			if name != "main" && name != "temp" {
				return true
			}
		case []byte:
			if n := string(name); n != "main" && n != "temp" {
				return true
			}
		default:
			return true
		}
	}
}

// prepareTimePragma reports a statement text starting with PRAGMA or
// EXPLAIN (EXPLAIN PRAGMA runs the pragma's code generation too).
func prepareTimePragma(text string) bool {
	kw := firstKeyword(text)
	return kw == "PRAGMA" || kw == "EXPLAIN"
}

// writesMain asks SQLite, through EXPLAIN, whether the single statement
// stmt opens a write transaction on the main database (an OP_Transaction
// on database 0 with a non-zero P2; sqlite.org/opcode.html#Transaction).
// When EXPLAIN cannot tell (it fails), the answer is yes.
//
// EXPLAIN of a write sets the connection's changes() to 0 when it ends, so
// it runs only on a connection that has something else to write: TEMP
// objects or an attached database.
func writesMain(sc sqlbase.Conn, stmt string) bool {
	if !hasOtherDatabases(sc) {
		return true
	}
	rows, err := sc.QueryContext(context.Background(), "EXPLAIN "+stmt, nil)
	if err != nil {
		return true
	}
	defer rows.Close()
	cols := rows.Columns()
	op, p1, p2 := slices.Index(cols, "opcode"), slices.Index(cols, "p1"), slices.Index(cols, "p2")
	if op < 0 || p1 < 0 || p2 < 0 {
		return true
	}
	v := make([]driver.Value, len(cols))
	for {
		if err := rows.Next(v); err != nil {
			return err != io.EOF
		}
		name, _ := v[op].(string)
		db, _ := v[p1].(int64)
		wr, _ := v[p2].(int64)
		if name == "Transaction" && db == 0 && wr != 0 {
			return true
		}
	}
}

// exclusiveLockingRE matches a statement (comments removed) PRAGMA
// [schema.]locking_mode = EXCLUSIVE or PRAGMA locking_mode(EXCLUSIVE), in
// any case, with optional quotes.
var exclusiveLockingRE = regexp.MustCompile(`(?is)^\s*pragma\s+(?:["'\x60\[]?\w+["'\x60\]]?\s*\.\s*)?["'\x60\[]?locking_mode["'\x60\]]?\s*(?:=|\()\s*["'\x60\[]?exclusive\b`)

// refusesLocking reports whether any statement of query sets locking_mode
// to EXCLUSIVE. It must be decided from the text, before SQLite prepares
// anything: SQLite applies PRAGMA locking_mode while preparing it.
func refusesLocking(query string) bool {
	if !mentionsLockingMode(query) {
		return false
	}
	for _, stmt := range splitStatements(query) {
		if exclusiveLockingRE.MatchString(stmt) {
			return true
		}
	}
	return false
}

// splitStatements splits q at the semicolons outside quotes ('…', "…",
// `…`, […]) and comments, and replaces every comment by a space, in the
// way SQLite's tokenizer reads them (sqlite.org/lang_comment.html). It is
// for judging text before SQLite prepares it, not for running it.
func splitStatements(q string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == ';':
			out = append(out, b.String())
			b.Reset()
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				i = len(q)
			} else {
				i += j
			}
			b.WriteByte(' ')
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				i = len(q)
			} else {
				i += j + 3
			}
			b.WriteByte(' ')
		case c == '\'' || c == '"' || c == '`' || c == '[':
			end := c
			if c == '[' {
				end = ']'
			}
			j := strings.IndexByte(q[i+1:], end)
			if j < 0 {
				b.WriteString(q[i:])
				i = len(q)
				break
			}
			// A doubled quote inside is two adjacent quoted parts: the
			// same split.
			b.WriteString(q[i : i+j+2])
			i += j + 1
		default:
			b.WriteByte(c)
		}
	}
	return append(out, b.String())
}

// firstKeyword returns the first word of query, upper-cased, skipping
// white space, '(' and SQL comments.
func firstKeyword(q string) string { return sqlbase.FirstWord(q) }

// mentionsLockingMode reports, without allocating, whether q contains
// "locking_mode" in any case: the cheap test before classify inside the
// driver's own transaction.
func mentionsLockingMode(q string) bool { return mentionsWord(q, "locking_mode") }

// mentionsWord reports, without allocating, whether q contains w (lower
// case, ASCII) in any case. Comments and literals count: a false positive
// only costs a slower path.
func mentionsWord(q, w string) bool {
	for i := 0; i+len(w) <= len(q); i++ {
		if q[i]|0x20 == w[0] && strings.EqualFold(q[i:i+len(w)], w) {
			return true
		}
	}
	return false
}
