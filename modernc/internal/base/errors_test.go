package base_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/modernc/internal/base"
)

// checkCode checks that err, and err wrapped twice, read as SQLite's
// primary code code with a message containing msg, both through
// base.ReadError and through sqlbase.Code (the reader the package's init
// registered).
func checkCode(t *testing.T, err error, code int, msg string) sqlbase.ErrorCode {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want SQLite's code %d", code)
	}
	c, ok := base.ReadError(err)
	if !ok || c.Code != code || c.Extended&0xff != code || !strings.Contains(c.Message, msg) || c.Errno != 0 {
		t.Fatalf("ReadError(%v) = %+v, %v; want code %d, a message containing %q, no errno", err, c, ok, code, msg)
	}
	wrapped := fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", err))
	if got, ok := sqlbase.Code(wrapped); !ok || got != c {
		t.Fatalf("sqlbase.Code(wrapped) = %+v, %v; want %+v", got, ok, c)
	}
	return c
}

// A real SQLITE_BUSY: a second connection's BEGIN IMMEDIATE while the
// first holds the write lock, with no busy timeout.
func TestReadErrorBusy(t *testing.T) {
	ctx := context.Background()
	p := newDB(t)
	dsn := "file:" + p + "?_pragma=busy_timeout(0)"
	holder := conn(t, openDB(t, dsn))
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err := conn(t, openDB(t, dsn)).ExecContext(ctx, "BEGIN IMMEDIATE")
	c := checkCode(t, err, sqlbase.Busy, "locked")
	if c.Extended != sqlbase.Busy {
		t.Errorf("extended code %d, want %d (plain SQLITE_BUSY)", c.Extended, sqlbase.Busy)
	}
	wrapped := fmt.Errorf("claim: %w", err)
	if !sqlbase.IsBusy(wrapped) || !busy.Is(wrapped) || sqlbase.WriteRefused(wrapped) {
		t.Errorf("IsBusy %v, busy.Is %v, WriteRefused %v; want true, true, false",
			sqlbase.IsBusy(wrapped), busy.Is(wrapped), sqlbase.WriteRefused(wrapped))
	}
}

// "no such table" is SQLITE_ERROR, neither busy nor a refused write.
func TestReadErrorNoSuchTable(t *testing.T) {
	_, err := openDB(t, dsnOf(newDB(t))).Exec("SELECT * FROM nope")
	c := checkCode(t, err, sqlbase.Error, "no such table: nope")
	if c.Extended != sqlbase.Error {
		t.Errorf("extended code %d, want %d", c.Extended, sqlbase.Error)
	}
	if sqlbase.IsBusy(err) || sqlbase.WriteRefused(err) {
		t.Errorf("IsBusy %v, WriteRefused %v; want false, false", sqlbase.IsBusy(err), sqlbase.WriteRefused(err))
	}
}

// A write on a connection opened read-only (mode=ro) is SQLITE_READONLY,
// a refused write.
func TestReadErrorReadOnly(t *testing.T) {
	_, err := openDB(t, "file:"+newDB(t)+"?mode=ro").Exec("UPDATE counter SET n = n + 1")
	checkCode(t, err, sqlbase.ReadOnly, "readonly")
	if !sqlbase.WriteRefused(fmt.Errorf("w: %w", err)) {
		t.Errorf("WriteRefused(%v) = false, want true", err)
	}
}

// Errors that are not modernc's are not read.
func TestReadErrorNotSQLite(t *testing.T) {
	for _, err := range []error{nil, errors.New("database is locked (5) (SQLITE_BUSY)"), context.Canceled} {
		if c, ok := base.ReadError(err); ok {
			t.Errorf("ReadError(%v) = %+v, true; want false", err, c)
		}
	}
}
