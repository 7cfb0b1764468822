package cleolease

import (
	"errors"
	"reflect"
	"regexp"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// class is what SQLite says of a statement string.
type class struct {
	write     bool  // may write: some statement is not sqlite3_stmt_readonly
	fenceable bool  // may run inside the driver's BEGIN IMMEDIATE … COMMIT
	refuse    error // the string must not run (nor be prepared) on a leased connection
	inputs    int   // parameters of the first statement (go-sqlite3 checks them first)
}

// ErrExclusiveLocking is returned, without running anything, for a
// statement string holding PRAGMA locking_mode=EXCLUSIVE on a connection
// whose writes take the lease: in exclusive locking mode SQLite keeps its
// file locks after each transaction, so every other process's lease (and
// write) would stall until this connection closes. Open the database with
// _lease_mode=off to use exclusive locking.
var ErrExclusiveLocking = errors.New("cleolease: PRAGMA locking_mode=EXCLUSIVE keeps SQLite's file locks and would stall every other process; it needs _lease_mode=off")

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
	k, err := classifySQL(lc.SQLiteConn, query)
	if err != nil {
		return class{}, err
	}
	if lc.classes == nil || len(lc.classes) > 512 {
		lc.classes = map[string]class{}
	}
	lc.classes[query] = k
	return k, nil
}

func classifySQL(sc *sqlite3.SQLiteConn, query string) (class, error) {
	if refusesLocking(query) {
		return class{refuse: ErrExclusiveLocking}, nil
	}
	var k class
	n := 0 // statements that are not empty
	for rest := query; rest != ""; {
		ds, err := sc.Prepare(rest)
		if err != nil {
			if n == 0 {
				return class{}, err
			}
			return class{write: true}, nil
		}
		s := ds.(*sqlite3.SQLiteStmt)
		tail := stmtTail(s)
		if !stmtEmpty(s) {
			n++
			text := rest[:len(rest)-len(tail)]
			if !s.Readonly() {
				k.write = true
			}
			if n == 1 {
				k.fenceable = !unfenced[firstKeyword(text)]
				k.inputs = s.NumInput()
			}
		}
		s.Close()
		if len(tail) >= len(rest) {
			break // defensive: SQLite always consumes input
		}
		rest = tail
	}
	if n > 1 {
		k.fenceable = false
	}
	return k, nil
}

// stmtTail returns the unparsed remainder of a prepared string. go-sqlite3
// keeps it in an unexported field; reading a string field through reflect
// is allowed and changes nothing.
func stmtTail(s *sqlite3.SQLiteStmt) string {
	return reflect.ValueOf(s).Elem().FieldByName("t").String()
}

// stmtEmpty reports a statement SQLite prepared to nothing (its handle is
// NULL: the text was empty, white space or comments). go-sqlite3 skips
// such statements; running one directly would crash.
func stmtEmpty(s *sqlite3.SQLiteStmt) bool {
	return reflect.ValueOf(s).Elem().FieldByName("s").IsNil()
}

// exclusiveLockingRE matches PRAGMA [schema.]locking_mode = EXCLUSIVE and
// PRAGMA locking_mode(EXCLUSIVE), in any case, with optional quotes.
var exclusiveLockingRE = regexp.MustCompile(`(?is)^\s*pragma\s+(?:["'\x60\[]?\w+["'\x60\]]?\s*\.\s*)?["'\x60\[]?locking_mode["'\x60\]]?\s*(?:=|\()\s*["'\x60\[]?exclusive\b`)

// exclusiveLocking reports whether the statement text (comments allowed
// before it) sets locking_mode to EXCLUSIVE.
func exclusiveLocking(stmt string) bool {
	return exclusiveLockingRE.MatchString(stripLeadingComments(stmt))
}

// refusesLocking reports whether any statement of query sets locking_mode
// to EXCLUSIVE. It must be decided from the text, before SQLite prepares
// anything: SQLite applies PRAGMA locking_mode while preparing it
// (sqlite.org/pragma.html#pragma_locking_mode takes effect on the
// connection at once). Statements are split at every ';', quotes
// ignored, which can only refuse more, never less.
func refusesLocking(query string) bool {
	if !mentionsLockingMode(query) {
		return false
	}
	for _, part := range strings.Split(query, ";") {
		if exclusiveLocking(part) {
			return true
		}
	}
	return false
}

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

// stripLeadingComments drops white space, ';' and SQL comments before the
// first token of q.
func stripLeadingComments(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n\f;")
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q, "*/")
			if i < 0 {
				return ""
			}
			q = q[i+2:]
		default:
			return q
		}
	}
}

// firstKeyword returns the first word of query, upper-cased, skipping
// white space, '(' and SQL comments.
func firstKeyword(q string) string {
	for q = stripLeadingComments(q); strings.HasPrefix(q, "("); {
		q = stripLeadingComments(q[1:])
	}
	end := strings.IndexFunc(q, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
	if end < 0 {
		end = len(q)
	}
	return strings.ToUpper(q[:end])
}
