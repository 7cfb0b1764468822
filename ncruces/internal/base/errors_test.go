package base_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces/internal/base"
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
	if !ok || c.Code != code || c.Extended&0xff != code || !strings.Contains(c.Message, msg) {
		t.Fatalf("ReadError(%v) = %+v, %v; want code %d, a message containing %q", err, c, ok, code, msg)
	}
	// ncruces's error: a *sqlite3.Error, or the bare code it returns when
	// SQLite has nothing to say beyond the code's own message.
	var own error
	var se *sqlite3.Error
	var xc sqlite3.ExtendedErrorCode
	switch {
	case errors.As(err, &se):
		own, xc = se, se.ExtendedCode()
	case errors.As(err, &xc):
		own = xc
	default:
		t.Fatalf("%T %v is not ncruces's", err, err)
	}
	if c.Err != own || c.Message != own.Error() || c.Extended != int(xc) {
		t.Fatalf("ReadError(%v) = %+v; want ncruces's error %v, its message and extended code %d", err, c, own, xc)
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
	if c.Extended != sqlbase.Busy || c.Errno != 0 {
		t.Errorf("extended code %d, errno %v; want %d (plain SQLITE_BUSY), none", c.Extended, c.Errno, sqlbase.Busy)
	}
	wrapped := fmt.Errorf("claim: %w", err)
	if !sqlbase.IsBusy(wrapped) || !busy.Is(wrapped) || sqlbase.WriteRefused(wrapped) {
		t.Errorf("IsBusy %v, busy.Is %v, WriteRefused %v; want true, true, false",
			sqlbase.IsBusy(wrapped), busy.Is(wrapped), sqlbase.WriteRefused(wrapped))
	}

	// A write with arguments fails busy inside ncruces's statement, which
	// joins its step's error with its bindings' (errors.Join): still busy.
	c2 := openConn(t, base.For(nil), dsn)
	_, err = c2.ExecContext(ctx, "UPDATE counter SET n = ?", []driver.NamedValue{{Ordinal: 1, Value: int64(1)}})
	if _, joined := err.(interface{ Unwrap() []error }); !joined {
		t.Logf("the statement's error is %T, not a join", err)
	}
	checkCode(t, err, sqlbase.Busy, "locked")
	if !sqlbase.IsBusy(err) || !busy.Is(fmt.Errorf("w: %w", err)) {
		t.Errorf("a busy write with arguments: IsBusy false for %T %v", err, err)
	}
}

// "no such table" is SQLITE_ERROR, neither busy nor a refused write.
func TestReadErrorNoSuchTable(t *testing.T) {
	_, err := openDB(t, dsnOf(newDB(t))).Exec("SELECT * FROM nope")
	c := checkCode(t, err, sqlbase.Error, "no such table: nope")
	if c.Extended != sqlbase.Error || c.Errno != 0 {
		t.Errorf("extended code %d, errno %v; want %d, none", c.Extended, c.Errno, sqlbase.Error)
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

// A file that cannot be opened is SQLITE_CANTOPEN carrying the operating
// system's errno, which ncruces's error wraps.
func TestReadErrorErrno(t *testing.T) {
	missing := filepath.Join(testdir.New(t), "missing.db")
	_, _, err := base.For(nil).Open("file:"+missing+"?mode=ro", false)
	c := checkCode(t, err, sqlite3CantOpen, "unable to open")
	if c.Errno != syscall.ENOENT {
		t.Errorf("errno %v (%d); want ENOENT", c.Errno, c.Errno)
	}
}

const sqlite3CantOpen = int(sqlite3.CANTOPEN)

// ncruces's bare codes (which it returns for some errors of its own) are
// read too, alone or wrapped; errors that are not ncruces's are not.
func TestReadErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err            error
		code, extended int
	}{
		{sqlite3.INTERRUPT, int(sqlite3.INTERRUPT), int(sqlite3.INTERRUPT)},
		{fmt.Errorf("x: %w", sqlite3.MISUSE), int(sqlite3.MISUSE), int(sqlite3.MISUSE)},
		{sqlite3.BUSY_TIMEOUT, int(sqlite3.BUSY), int(sqlite3.BUSY_TIMEOUT)},
		{fmt.Errorf("x: %w", sqlite3.READONLY_DBMOVED), int(sqlite3.READONLY), int(sqlite3.READONLY_DBMOVED)},
		{errors.Join(errors.New("first"), sqlite3.BUSY), int(sqlite3.BUSY), int(sqlite3.BUSY)},
	} {
		c, ok := base.ReadError(tc.err)
		if !ok || c.Code != tc.code || c.Extended != tc.extended || c.Err == nil || c.Message == "" {
			t.Errorf("ReadError(%v) = %+v, %v; want code %d, extended %d", tc.err, c, ok, tc.code, tc.extended)
		}
	}
	for _, err := range []error{nil, errors.New("sqlite3: database is locked"), context.Canceled, fmt.Errorf("x: %w", context.DeadlineExceeded)} {
		if c, ok := base.ReadError(err); ok {
			t.Errorf("ReadError(%v) = %+v, true; want false", err, c)
		}
	}
}
