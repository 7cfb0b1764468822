//go:build !windows

package core

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/mattn/go-sqlite3"
)

// This file is left out on Windows: there a file SQLite holds open cannot
// be renamed over (it opens without FILE_SHARE_DELETE, so MoveFileEx
// answers "Access denied"), and SQLITE_READONLY_DBMOVED is an answer of
// SQLite's unix VFS only (sqlite.org/rescode.html#readonly_dbmoved).

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
