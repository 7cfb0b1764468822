package difftest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// recorder is a testing.TB whose Fatal and Fatalf record the failure and
// end the goroutine (as testing's do) instead of failing the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fails runs f with a recorder on a goroutine of its own and returns the
// message of its failure, "" when it did not fail.
func fails(t testing.TB, f func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

// CheckDetects makes sure the comparison can fail, on twins just opened
// (raw: the base's own driver; cl: cleolease over it): a row inserted
// behind the cleolease twin's back must fail CompareOps at the call that
// reads it and RunOn at the end of the sequence, values of different types
// must render differently, and an SQLite error of the base must be read
// with its codes (sqlbase.Code), its wrapping telling it from the bare
// error.
func CheckDetects(t testing.TB, raw, cl *sql.DB) {
	t.Helper()
	ctx := context.Background()
	if _, err := cl.ExecContext(ctx, "CREATE TABLE extra(x); INSERT INTO extra VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if msg := fails(t, func(tb testing.TB) { RunOn(tb, raw, cl, nil) }); !strings.Contains(msg, "data differs") {
		t.Fatalf("RunOn of twins with different data did not fail on the data: %q", msg)
	}
	if _, err := cl.ExecContext(ctx, "INSERT INTO t(a) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	ops := []Op{Seq("query", "SELECT count(*) FROM p"), Seq("query", "SELECT a FROM t")}
	if msg := fails(t, func(tb testing.TB) { CompareOps(tb, &Session{DB: raw}, &Session{DB: cl}, ops) }); !strings.Contains(msg, "call 1 differs") {
		t.Fatalf("CompareOps of different rows did not fail at call 1: %q", msg)
	}
	if msg := fails(t, func(tb testing.TB) { CompareOps(tb, &Session{DB: raw}, &Session{DB: cl}, ops[:1]) }); msg != "" {
		t.Fatalf("CompareOps of equal rows failed: %q", msg)
	}
	if DumpTables(t, raw) == DumpTables(t, cl) {
		t.Fatal("the dumps of different data compare equal")
	}
	if FmtValue(int64(1)) == FmtValue("1") || FmtValue([]byte{}) == FmtValue([]byte(nil)) {
		t.Fatal("FmtValue loses the type")
	}
	for name, db := range map[string]*sql.DB{"raw": raw, "cleolease": cl} {
		_, err := db.ExecContext(ctx, "INSERT INTO missing VALUES (1)")
		bare := FmtErr(ctx, err)
		if c, ok := sqlbase.Code(err); !ok || c.Code != sqlbase.Error || !strings.Contains(bare, " sqlite(") || !strings.Contains(bare, "missing") {
			t.Fatalf("%s: the error of a missing table is not read as SQLite's: %s", name, bare)
		}
		if wrapped := FmtErr(ctx, fmt.Errorf("w: %w", err)); wrapped == bare {
			t.Fatalf("%s: a wrapped SQLite error renders as the bare one: %s", name, wrapped)
		}
		if other := FmtErr(ctx, errors.New(err.Error())); other == bare {
			t.Fatalf("%s: an error of another type with the same text renders as SQLite's: %s", name, other)
		}
	}
}
