package shim

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
	sqlite3 "github.com/mattn/go-sqlite3"
)

func TestSuiteDSN(t *testing.T) {
	t.Setenv("TMPDIR", testdir.New(t))
	tmp := os.TempDir()
	kept := []string{
		"a.db",
		"a.db?_busy_timeout=5",
		"file:a.db?mode=rwc",
		"file::memory:?cache=shared",
		"file:m?mode=memory&cache=shared",
		"file:/dbname?vfs=memdb",
	}
	for _, dsn := range kept {
		if got := suiteDSN(dsn); got != dsn {
			t.Errorf("suiteDSN(%q) = %q, want it unchanged", dsn, got)
		}
	}
	private := []struct{ dsn, prefix, suffix string }{
		{"", tmp, "/db.sqlite"},
		{":memory:", tmp, "/db.sqlite"},
		{":memory:?_stmt_cache_size=8", tmp, "/db.sqlite?_stmt_cache_size=8"},
		{"file::memory:", "file:" + tmp, "/db.sqlite"},
		{"file::memory:?_fk=1", "file:" + tmp, "/db.sqlite?_fk=1"},
		{"file:x?mode=memory", "file:" + tmp, "/db.sqlite"},
		{"file:x?mode=memory&_fk=1", "file:" + tmp, "/db.sqlite?_fk=1"},
	}
	seen := map[string]bool{}
	for _, p := range private {
		got := suiteDSN(p.dsn)
		got = strings.ReplaceAll(got, string(filepath.Separator), "/") // Windows: C:\…\db.sqlite
		prefix := strings.ReplaceAll(p.prefix, string(filepath.Separator), "/")
		if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, p.suffix) || seen[got] {
			t.Errorf("suiteDSN(%q) = %q, want a new file %s…%s", p.dsn, got, p.prefix, p.suffix)
		}
		seen[got] = true
	}
}

func TestSuiteRegisterUsesBaseDriver(t *testing.T) {
	hooked := 0
	name := "sqlite3suite_shim_" + strings.ReplaceAll(t.Name(), "/", "_")
	suiteRegister(name, &sqlite3.SQLiteDriver{ConnectHook: func(*sqlite3.SQLiteConn) error {
		hooked++
		return nil
	}})
	db, err := sql.Open(name, filepath.Join(testdir.New(t), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	if hooked == 0 {
		t.Error("the registered driver's ConnectHook never ran")
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		if _, ok := dc.(cleolease.Conn); !ok {
			t.Errorf("connection is %T, want a cleolease.Conn", dc)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
