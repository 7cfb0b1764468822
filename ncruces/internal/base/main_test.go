package base_test

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

// roleEnv selects the role a re-executed test binary (this one, or this
// package's tests built with other tags) plays instead of running tests:
// "count" is basetest.Main over this base; "locking" is runLocking.
const roleEnv = "CLEOLEASE_NCRUCES_ROLE"

// baseDriverName is the driver TestMain registers over base.For(nil): the
// application's connections as cleolease's driver opens them
// (sqlbase.Driver.Open), which have the QueryContext that ncruces's own
// connections leave to database/sql and that basetest.Increment calls.
const baseDriverName = "ncruces-base"

// baseDriver opens connections with b.Open, as cleolease's driver does.
type baseDriver struct{ b *base.Base }

func (d baseDriver) Open(dsn string) (driver.Conn, error) {
	c, _, err := d.b.Open(dsn, false)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// baseConnector is baseDriver for one DSN, for sql.OpenDB.
type baseConnector struct {
	b   *base.Base
	dsn string
}

func (c baseConnector) Connect(context.Context) (driver.Conn, error) {
	return baseDriver{c.b}.Open(c.dsn)
}

func (c baseConnector) Driver() driver.Driver { return baseDriver{c.b} }

// openBase opens dsn with b's connections (b.Open), closed when the test
// ends.
func openBase(t testing.TB, b *base.Base, dsn string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(baseConnector{b, dsn})
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMain(m *testing.M) {
	sql.Register(baseDriverName, baseDriver{base.For(nil)})
	switch os.Getenv(roleEnv) {
	case "count":
		os.Exit(basetest.Main(base.For(nil), baseDriverName, dsnOf))
	case "locking":
		os.Exit(runLocking())
	}
	os.Exit(m.Run())
}

// runLocking is the role "locking": it prints "kind K", K the kind of
// file lock this build of the base reports, then opens the lease engine
// of basetest.EnvDB over the base. It prints "refused REASON" when Open
// fails with lease.ErrLockingConflict (a *lease.Error of the open), "ERR
// …" for any other error; else "open", and it stays open until stdin
// ends.
func runLocking() int {
	fmt.Println("kind", base.For(nil).Locking())
	path := os.Getenv(basetest.EnvDB)
	e, err := lease.Open(context.Background(), lease.Options{Base: base.For(nil), Path: path, DSN: dsnOf(path), TTL: time.Hour})
	if err != nil {
		var le *lease.Error
		if errors.Is(err, lease.ErrLockingConflict) && errors.As(err, &le) && le.Op == "open" {
			fmt.Println("refused", le.Reason)
			return 0
		}
		fmt.Println("ERR", err)
		return 1
	}
	defer e.Close()
	fmt.Println("open")
	bufio.NewScanner(os.Stdin).Scan()
	return 0
}

// dsnOf is the DSN, in ncruces's dialect, that the tests open path with
// (the application's connections and the engine's).
func dsnOf(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)"
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

// openDB opens dsn with ncruces's registered driver (the application's
// connections), closed when the test ends.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", dsn)
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

// openConn opens dsn on b (Base.Open, without the probe), closed when the
// test ends.
func openConn(t testing.TB, b *base.Base, dsn string) sqlbase.Conn {
	t.Helper()
	c, _, err := b.Open(dsn, false)
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// execNoArgs runs query, without arguments, on c.
func execNoArgs(t testing.TB, c sqlbase.Conn, query string) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), query, nil); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// queryValue returns the first column of query's first row on c, a
// connection of this base (its QueryContext).
func queryValue(t testing.TB, c driver.Conn, query string, args ...driver.NamedValue) driver.Value {
	t.Helper()
	rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), query, args)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	v := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v[0]
}

// newFile creates a database file (rollback journal) holding table t(x)
// and returns its path.
func newFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(testdir.New(t), "d.db")
	c := openConn(t, base.For(nil), p)
	execNoArgs(t, c, "CREATE TABLE t(x)")
	c.Close()
	return p
}
