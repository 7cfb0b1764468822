//go:build linux

package litefstest

import (
	"database/sql"
	"errors"
	"strings"
	"syscall"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// A cluster replicates a WAL database from the primary to the replica,
// the replica's .primary names the primary, a failover (primary stopped,
// replica promoted, former primary following it) keeps the data, and when
// the test ends both mounts are gone and both litefs processes have
// exited.
func TestCluster(t *testing.T) {
	var c *Cluster
	var pids []int
	t.Run("cluster", func(t *testing.T) {
		c = Start(t)
		db := open(t, c.Primary.Path("app.db"))
		mustExec(t, db, "CREATE TABLE t (v INTEGER)")
		mustExec(t, db, "INSERT INTO t VALUES (1)")
		WaitReplicated(t, "app.db", c.Primary, c.Replica)
		if got := count(t, open(t, c.Replica.Path("app.db"))); got != 1 {
			t.Fatalf("replica has %d rows, want 1", got)
		}
		if name, ok := PrimaryName(c.Replica); !ok || name != c.Primary.Name {
			t.Fatalf("replica's .primary = %q, %v; want %q", name, ok, c.Primary.Name)
		}
		if name, ok := PrimaryName(c.Primary); ok {
			t.Fatalf("primary has a .primary file (%q)", name)
		}
		if _, err := open(t, c.Replica.Path("app.db")).Exec("INSERT INTO t VALUES (2)"); err == nil {
			t.Fatal("a write on the replica succeeded")
		}
		db.Close()

		c.Primary.Stop()
		c.Replica.Promote()
		if !c.Replica.IsPrimary() || c.Primary.Running() {
			t.Fatal("after the failover node2 is not the primary or node1 still runs")
		}
		mustExec(t, open(t, c.Replica.Path("app.db")), "INSERT INTO t VALUES (3)")
		c.Primary.Follow(c.Replica)
		WaitReplicated(t, "app.db", c.Replica, c.Primary)
		if got := count(t, open(t, c.Primary.Path("app.db"))); got != 2 {
			t.Fatalf("former primary has %d rows after following node2, want 2", got)
		}
		for _, n := range []*Node{c.Primary, c.Replica} {
			n.mu.Lock()
			pids = append(pids, n.proc.cmd.Process.Pid)
			n.mu.Unlock()
		}
	})
	if c == nil || t.Failed() {
		return
	}
	for _, n := range []*Node{c.Primary, c.Replica} {
		if src, ok := mountSource(n.Mount); ok {
			t.Errorf("%s still mounted (source %q) after the test", n.Mount, src)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("litefs pid %d still exists after the test (kill 0: %v)", pid, err)
		}
	}
}

// Under CI=true a missing tool fails rather than skips; elsewhere it skips
// naming what is missing.
func TestRequireNamesWhatIsMissing(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("GOBIN", "/nonexistent")
	t.Setenv("GOPATH", "/nonexistent")
	_, err := Find()
	if err == nil {
		t.Fatal("Find found the tools with an empty PATH")
	}
	for _, want := range []string{"litefs", "fusermount3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	ft := &fakeTB{TB: t}
	t.Setenv("CI", "true")
	runGuarded(func() { Require(ft) })
	if !ft.fatal || ft.skipped {
		t.Errorf("under CI=true Require: fatal %v, skipped %v; want a failure", ft.fatal, ft.skipped)
	}
	ft = &fakeTB{TB: t}
	t.Setenv("CI", "")
	runGuarded(func() { Require(ft) })
	if ft.fatal || !ft.skipped {
		t.Errorf("outside CI Require: fatal %v, skipped %v; want a skip", ft.fatal, ft.skipped)
	}
}

func open(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fakeTB records Fatal and Skip instead of ending the test.
type fakeTB struct {
	testing.TB
	fatal, skipped bool
}

type stop struct{}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Fatalf(string, ...any) { f.fatal = true; panic(stop{}) }
func (f *fakeTB) Skip(...any)           { f.skipped = true; panic(stop{}) }
func (f *fakeTB) Fatal(...any)          { f.fatal = true; panic(stop{}) }
func (f *fakeTB) Skipf(string, ...any)  { f.skipped = true; panic(stop{}) }
func (f *fakeTB) Errorf(string, ...any) { f.fatal = true }
func (f *fakeTB) Logf(string, ...any)   {}
func (f *fakeTB) Log(...any)            {}

// runGuarded runs f, absorbing the panic fakeTB uses to end it.
func runGuarded(f func()) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
		}
	}()
	f()
}
