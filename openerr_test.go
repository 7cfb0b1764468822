package cleolease_test

import (
	"database/sql"
	"errors"
	"github.com/cleocode/cleolease/internal/testdir"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// TestOpenErrorsNameTheFile: SQLite's errors at open ("unable to open
// database file", "file is not a database") name the file, and errors.As
// still reaches the sqlite3.Error; a statement's error stays exactly
// go-sqlite3's (issue 16, item 2).
func TestOpenErrorsNameTheFile(t *testing.T) {
	dir := testdir.New(t)
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-dir", "app.db")
	for _, tc := range []struct {
		dsn, path string
		code      sqlite3.ErrNo
	}{
		{"file:" + missing, missing, sqlite3.ErrCantOpen},
		{missing, missing, sqlite3.ErrCantOpen},
		{"file:" + junk, junk, sqlite3.ErrNotADB},
		{junk + "?_lease_mode=off", junk, sqlite3.ErrNotADB},
	} {
		db, err := sql.Open("cleolease", tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Ping()
		db.Close()
		var se sqlite3.Error
		if !errors.As(err, &se) || se.Code != tc.code {
			t.Errorf("Ping(%s) = %v; want a sqlite3.Error with code %d reachable by errors.As", tc.dsn, err, tc.code)
		}
		if err == nil || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Ping(%s) = %v; want the file %s named", tc.dsn, err, tc.path)
		}
	}

	db := openLeased(t, "file:"+filepath.Join(dir, "ok.db"))
	_, err := db.Exec(`SELEC 1`)
	if _, ok := err.(sqlite3.Error); !ok {
		t.Errorf("statement error = %v (%T), want go-sqlite3's sqlite3.Error unchanged", err, err)
	}
}
