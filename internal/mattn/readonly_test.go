package mattn

import (
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
)

// TestOpenedReadOnly pins sqlbase.OpenedReadOnly's reading of EXPLAIN BEGIN
// IMMEDIATE to what the SQLite go-sqlite3 bundles decides: read-only for mode=ro and immutable=1,
// writable for a default open, for a read-only open of a WAL file, and for
// an in-memory database. A SQLite whose EXPLAIN listing changes fails here
// rather than silently treating every file as writable.
func TestOpenedReadOnly(t *testing.T) {
	dir := testdir.New(t)
	rollback := filepath.Join(dir, "rollback.db")
	wal := filepath.Join(dir, "wal.db")
	for _, dsn := range []string{"file:" + rollback, "file:" + wal + "?_journal_mode=WAL"} {
		sc := openRaw(t, dsn)
		if _, err := sc.Exec(`CREATE TABLE t(x)`, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		dsn  string
		want bool
	}{
		{"file:" + rollback, false},
		{"file:" + rollback + "?mode=ro", true},
		{"file:" + rollback + "?immutable=1", true},
		{"file:" + wal, false},
		{"file:" + wal + "?mode=ro", true},
		{"file:" + rollback + "?mode=ro&_query_only=1", true},
		{":memory:", false},
		{"file:/m?vfs=memdb", false},
	} {
		sc := openRaw(t, c.dsn)
		if got := sqlbase.OpenedReadOnly(sc); got != c.want {
			t.Errorf("%s: OpenedReadOnly = %v, want %v", c.dsn, got, c.want)
		}
		// The probe starts nothing: the connection is still in autocommit
		// and writable connections can still write.
		if !sc.AutoCommit() {
			t.Errorf("%s: the probe left a transaction open", c.dsn)
		}
		if !c.want {
			if _, err := sc.Exec(`CREATE TABLE IF NOT EXISTS w(x)`, nil); err != nil {
				t.Errorf("%s: write after the probe: %v", c.dsn, err)
			}
		}
	}
}

func openRaw(t *testing.T, dsn string) *sqlite3.SQLiteConn {
	t.Helper()
	conn, err := (&sqlite3.SQLiteDriver{}).Open(dsn)
	if err != nil {
		t.Fatalf("%s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.(*sqlite3.SQLiteConn)
}

// BenchmarkOpenedReadOnly is the cost of the question each new connection
// asks (one EXPLAIN BEGIN IMMEDIATE).
func BenchmarkOpenedReadOnly(b *testing.B) {
	conn, err := (&sqlite3.SQLiteDriver{}).Open("file:" + filepath.Join(testdir.New(b), "b.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	sc := conn.(*sqlite3.SQLiteConn)
	for b.Loop() {
		if sqlbase.OpenedReadOnly(sc) {
			b.Fatal("read-only")
		}
	}
}
