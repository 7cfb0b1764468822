package core

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/mattn/go-sqlite3"
)

// TestSQLiteFileError: an SQLite error about the whole file is taken out of
// the lease engine's wrapping, as the same value; an error about one
// statement of the engine's own (a constraint), cleolease's own errors and
// nil are left as they are.
func TestSQLiteFileError(t *testing.T) {
	notADB := sqlite3.Error{Code: sqlite3.ErrNotADB, ExtendedCode: sqlite3.ErrNoExtended(sqlite3.ErrNotADB)}
	full := sqlite3.Error{Code: sqlite3.ErrFull}
	constraint := sqlite3.Error{Code: sqlite3.ErrConstraint}
	wrapped := &LeaseError{Op: "open", Path: "/x.db", Err: notADB}
	for _, tc := range []struct {
		in, want error
	}{
		{nil, nil},
		{notADB, notADB},
		{wrapped, notADB},
		{fmt.Errorf("claim: %w", &LeaseError{Op: "acquire", Err: full}), full},
		{&LeaseError{Op: "open", Err: constraint}, nil}, // unchanged: checked below
		{ErrLeaseLost, ErrLeaseLost},
	} {
		got := sqliteFileError(tc.in)
		if tc.want == nil && tc.in != nil {
			if got != tc.in {
				t.Errorf("sqliteFileError(%v) = %v; want it unchanged", tc.in, got)
			}
			continue
		}
		if !errors.Is(got, tc.want) || fmt.Sprintf("%T", got) != fmt.Sprintf("%T", tc.want) || got != tc.want {
			t.Errorf("sqliteFileError(%v) = %v (%T); want %v (%T)", tc.in, got, got, tc.want, tc.want)
		}
	}
}

// TestWriteErrorAfterTheFileMoved: SQLite's SQLITE_READONLY_DBMOVED, which
// a write meets when the database path was renamed over after the
// statement's file check passed (the file watch had not reported the
// rename yet), reaches the caller as ErrFileChanged; on a file still at
// its path the same code, and any other error, pass as they are.
func TestWriteErrorAfterTheFileMoved(t *testing.T) {
	path := filepath.Join(testdir.New(t), "moved.db")
	cfg, err := ParseDSN("file:" + path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConnector(cfg, dialect, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	moved := sqlite3.Error{Code: sqlite3.ErrReadonly, ExtendedCode: sqlite3.ErrNoExtended(sqlite3.ErrReadonly) | 4<<8}
	if moved.ExtendedCode != readOnlyDBMoved {
		t.Fatalf("SQLITE_READONLY_DBMOVED is %d, want %d", moved.ExtendedCode, readOnlyDBMoved)
	}
	other := sqlite3.Error{Code: sqlite3.ErrConstraint}
	if got := c.writeError(moved); got != error(moved) {
		t.Fatalf("before the rename: writeError = %v (%T), want SQLite's error unchanged", got, got)
	}
	repl, err := sql.Open("sqlite3", "file:"+path+".new")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repl.Exec(`CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	repl.Close()
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if got := c.writeError(other); got != error(other) {
		t.Fatalf("another error after the rename: writeError = %v, want it unchanged", got)
	}
	if got := c.writeError(moved); !errors.Is(got, ErrFileChanged) {
		t.Fatalf("after the rename: writeError = %v, want ErrFileChanged", got)
	}
}
