package ncruces_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
)

// panicValuer panics when it is converted. ncruces's connection accepts
// every argument as it is (its CheckNamedValue), so an unprepared
// statement's Valuer is converted by the base while it binds, inside
// cleolease's leased write: after the lease is taken and BEGIN IMMEDIATE
// has run.
type panicValuer struct{ v *int }

func (p panicValuer) Value() (driver.Value, error) { panic(p.v) }

// A panic unwinding through a leased write, recovered as net/http recovers
// a handler's, leaves neither the lane nor SQLite's write lock held: the
// write is rolled back, and another process that requires the lease writes
// at once (it fails, rather than waits, were either still held). The panic
// goes on with its own value. Inside a transaction the application began,
// the transaction is rolled back: its later statements and its Commit fail
// with an error that wraps sql.ErrTxDone.
func TestRecoveredPanicReleasesTheLease(t *testing.T) {
	path := filepath.Join(testdir.New(t), "p.db")
	db := open(t, "file:"+path)
	if _, err := db.Exec(counterSchema); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	written := 0
	other := func(what string) {
		t.Helper()
		k := proctest.Start(t, roleEnv+"=increment", "CLEOLEASE_DB="+path, "CLEOLEASE_N=1",
			"CLEOLEASE_DSN_QUERY=?_lease_mode=require&_lease_wait=20s&_pragma=busy_timeout(0)", proctest.GoraceNoExitSleep())
		if got := k.Expect(""); got != "done" {
			t.Fatalf("after a panic in %s, another process could not write: %q", what, got)
		}
		written++
		checkCounter(t, db, written)
	}
	for _, c := range []struct {
		name string
		run  func(v panicValuer)
	}{
		{"an autocommit Exec", func(v panicValuer) { db.ExecContext(ctx, "INSERT INTO log(v) VALUES (?)", v) }},
		// Through the driver (sql.Conn.Raw): a panic inside DB.Query would
		// leave database/sql's connection taken for ever, its file open.
		{"an autocommit Query", func(v panicValuer) {
			basetest.DriverQuery(ctx, db, "INSERT INTO log(v) VALUES (?) RETURNING v", driver.NamedValue{Ordinal: 1, Value: v})
		}},
		{"a transaction's Exec", func(v panicValuer) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO log(v) VALUES (-1)"); err != nil {
				t.Fatal(err)
			}
			p := basetest.Recovered(func() { tx.ExecContext(ctx, "INSERT INTO log(v) VALUES (?)", v) })
			if _, err := tx.ExecContext(ctx, "INSERT INTO log(v) VALUES (-2)"); !errors.Is(err, sql.ErrTxDone) {
				t.Errorf("a statement of the rolled-back transaction: %v, want an error wrapping sql.ErrTxDone", err)
			}
			if err := tx.Commit(); !errors.Is(err, sql.ErrTxDone) {
				t.Errorf("Commit of the rolled-back transaction: %v, want an error wrapping sql.ErrTxDone", err)
			}
			panic(p)
		}},
	} {
		v := panicValuer{new(int)}
		if p := basetest.Recovered(func() { c.run(v) }); p != v.v {
			t.Fatalf("%s: recovered %v, want the Valuer's own panic value", c.name, p)
		}
		var n int
		if err := db.QueryRow("SELECT count(*) FROM log").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != written {
			t.Fatalf("after a panic in %s the log holds %d rows, want %d: the write was not rolled back", c.name, n, written)
		}
		other(c.name)
	}
}
