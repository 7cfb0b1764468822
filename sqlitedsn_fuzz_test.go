package cleolease

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// FuzzSQLiteDSN checks the model of go-sqlite3's and SQLite's DSN syntax
// (analyzeDSN) against what go-sqlite3 v1.14.53 really opens: DSNs are
// built from pieces (a plain path or a "file:" URI, names with characters
// URIs treat specially, SQLite URI options and go-sqlite3 parameters)
// inside a temporary directory, opened with the "sqlite3" driver, and
// compared: an in-memory database has no file in PRAGMA database_list, a
// file database's file is the path the model names, and a write fails as
// read-only exactly when the model says the open is read-only.
//
//	go test -run '^$' -fuzz FuzzSQLiteDSN -fuzztime 1m .
func FuzzSQLiteDSN(f *testing.F) {
	f.Add([]byte{0, 0})
	f.Add([]byte{1, 2, 3, 1})
	f.Add([]byte{1, 3, 4, 6, 2})
	f.Add([]byte{0, 4, 10, 1})
	f.Fuzz(func(t *testing.T, data []byte) { checkDSNModel(t, data) })
}

// TestSQLiteDSNModelCompared makes sure FuzzSQLiteDSN's comparison is
// reached for plain paths and URIs, read-only or not.
func TestSQLiteDSNModelCompared(t *testing.T) {
	for _, data := range [][]byte{
		{0, 0, 0},       // plain path
		{1, 0, 0},       // file: URI
		{1, 0, 1, 0},    // URI, mode=ro: read-only
		{1, 3, 1, 7},    // URI of a name with '#', _query_only=1: read-only
		{0, 1, 1, 0},    // plain path, _query_only=1: read-only
		{0, 2, 2, 1, 4}, // plain path, two go-sqlite3 options
	} {
		if !checkDSNModel(t, data) {
			t.Errorf("%v (%q): the comparison was not reached", data, buildDSN("/tmp", data))
		}
	}
}

// checkDSNModel is FuzzSQLiteDSN's body; it reports whether it compared.
func checkDSNModel(t *testing.T, data []byte) (compared bool) {
	{
		dir, err := os.MkdirTemp("", "cleolease-dsn-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		dsn := buildDSN(dir, data)
		target, err := analyzeDSN(dsn)
		if err != nil {
			return false // the model refuses it; go-sqlite3 may open something else
		}
		if target.memory || target.path == "" {
			return false // private and shared memory: checked by TestLocation
		}
		// Create the file first, so that read-only opens find it.
		abs := target.path
		if !filepath.IsAbs(abs) {
			return false // relative to the working directory: not built here
		}
		if setup, err := sql.Open("sqlite3", "file:"+escapePath(abs)+"?_journal_mode=DELETE"); err == nil {
			setup.Exec("CREATE TABLE IF NOT EXISTS x(a)")
			setup.Close()
		}
		db, err := sql.Open("sqlite3", dsn)
		if err != nil {
			return false
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		var seq int
		var name, file string
		if err := db.QueryRow("PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
			return false // SQLite refused the open (bad option): nothing to compare
		}
		want, _ := filepath.EvalSymlinks(abs)
		got, _ := filepath.EvalSymlinks(file)
		if got != want {
			t.Fatalf("DSN %q: the model names %q, SQLite opened %q", dsn, abs, file)
		}
		_, werr := db.Exec("INSERT INTO x VALUES (1)")
		var se sqlite3.Error
		readOnly := werr != nil && (strings.Contains(werr.Error(), "readonly") || (asSQLiteErr(werr, &se) && se.Code == sqlite3.ErrReadonly))
		if readOnly != target.readOnly {
			t.Fatalf("DSN %q: the model says read-only=%v, a write returned %v", dsn, target.readOnly, werr)
		}
		return true
	}
}

func asSQLiteErr(err error, se *sqlite3.Error) bool {
	e, ok := err.(sqlite3.Error)
	if ok {
		*se = e
	}
	return ok
}

// escapePath percent-encodes the characters a "file:" URI path treats
// specially.
func escapePath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// buildDSN turns fuzz bytes into a DSN under dir.
func buildDSN(dir string, data []byte) string {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	names := []string{"a.db", "b c.db", "p%20q.db", "h#x.db", "q?y.db", "u%3fv.db", "semi;colon.db", "plus+.db"}
	uriOpts := []string{"mode=ro", "mode=rw", "mode=rwc", "immutable=1", "immutable=0", "cache=shared", "cache=private", "vfs=unix", "nolock=1", "psow=0", "mode=ro&mode=rw"}
	goOpts := []string{"_query_only=1", "_query_only=0", "_busy_timeout=10", "_fk=1", "_query_only=true", "_journal_mode=WAL", "_sync=OFF"}
	uri := next()%2 == 1
	name := filepath.Join(dir, names[next()%len(names)])
	var b strings.Builder
	if uri {
		b.WriteString("file:")
		b.WriteString(strings.NewReplacer("#", "%23", "?", "%3f").Replace(name))
	} else {
		if strings.ContainsAny(name, "?") {
			name = filepath.Join(dir, "plain.db")
		}
		b.WriteString(name)
	}
	sep := "?"
	for n := next() % 4; n > 0; n-- {
		o := next()
		opt := goOpts[o%len(goOpts)]
		if uri && o%3 == 0 {
			opt = uriOpts[o%len(uriOpts)]
		}
		b.WriteString(sep + opt)
		sep = "&"
	}
	return b.String()
}
