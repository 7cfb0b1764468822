package base_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/modernc/internal/base"
)

// roleEnv selects the role a re-executed test binary plays instead of
// running tests: "count" is basetest.Main over this base.
const roleEnv = "CLEOLEASE_MODERNC_ROLE"

// hookCalls counts, by DSN, the connections on which the connection hook
// registered at package level (on modernc's registered "sqlite" driver)
// ran: the application's connections. The hook is process-global, so it
// is registered once, here, before anything opens.
var hookCalls sync.Map // DSN → *atomic.Int64

func TestMain(m *testing.M) {
	sqlite.RegisterConnectionHook(func(_ sqlite.ExecQuerierContext, dsn string) error {
		v, _ := hookCalls.LoadOrStore(dsn, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		return nil
	})
	if os.Getenv(roleEnv) == "count" {
		os.Exit(basetest.Main(base.For(nil), "sqlite", dsnOf))
	}
	os.Exit(m.Run())
}

// hooksFor returns how many connections to path (a DSN naming it) the
// package-level hook has seen.
func hooksFor(path string) int64 {
	var n int64
	hookCalls.Range(func(k, v any) bool {
		if strings.Contains(k.(string), path) {
			n += v.(*atomic.Int64).Load()
		}
		return true
	})
	return n
}

// dsnOf is the DSN, in modernc's dialect, that the tests open path with
// (the application's connections and the engine's).
func dsnOf(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(30000)"
}

// newDB creates a WAL database holding basetest.Schema in a new test
// directory and returns its path.
func newDB(t testing.TB) string {
	t.Helper()
	p := filepath.Join(testdir.New(t), "lease.db")
	db := openDB(t, dsnOf(p))
	if _, err := db.Exec(basetest.Schema); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// openDB opens dsn with modernc's registered driver (the application's
// connections), closed when the test ends.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// conn returns one connection of db, closed when the test ends.
func conn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
