package cleolease_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/mattn/go-sqlite3"
)

// TestOpenErrorsKeepTheirType: SQLite's errors at open ("unable to open
// database file", "file is not a database") come back as go-sqlite3
// returns them, so err.(sqlite3.Error) works as in go-sqlite3's own
// TestOpenNoCreate, TestError_SystemErrno and TestCorruptDbErrors — also
// when it is the lease engine's first use of the file that meets the error
// (a rollback journal: go-sqlite3's open reads nothing). A statement's
// error stays go-sqlite3's too.
func TestOpenErrorsKeepTheirType(t *testing.T) {
	dir := testdir.New(t)
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-dir", "app.db")
	absent := filepath.Join(dir, "absent.db")
	for _, tc := range []struct {
		dsn   string
		code  sqlite3.ErrNo
		errno bool // SystemErrno is ENOENT
	}{
		{"file:" + absent + "?mode=rw", sqlite3.ErrCantOpen, true},
		{"file:" + absent + "?mode=ro", sqlite3.ErrCantOpen, true},
		{"file:" + missing, sqlite3.ErrCantOpen, true},
		{missing, sqlite3.ErrCantOpen, true},
		{"file:" + junk, sqlite3.ErrNotADB, false},
		{junk + "?_lease_mode=off", sqlite3.ErrNotADB, false},
		{"file:" + junk + "?_journal_mode=DELETE", sqlite3.ErrNotADB, false},
	} {
		db, err := sql.Open("cleolease", tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Ping()
		if err == nil {
			_, err = db.Exec("DROP TABLE foo")
		}
		db.Close()
		se, ok := err.(sqlite3.Error)
		switch {
		case !ok:
			t.Errorf("%s: error %v is a %T; want a sqlite3.Error itself", tc.dsn, err, err)
		case se.Code != tc.code:
			t.Errorf("%s: code %d (%v); want %d", tc.dsn, se.Code, se, tc.code)
		case tc.errno && !os.IsNotExist(se.SystemErrno):
			t.Errorf("%s: SystemErrno %v; want ENOENT", tc.dsn, se.SystemErrno)
		}
	}
	if _, err := os.Stat(absent); !os.IsNotExist(err) {
		t.Errorf("mode=rw and mode=ro created %s (stat: %v)", absent, err)
	}

	db := openLeased(t, "file:"+filepath.Join(dir, "ok.db"))
	_, err := db.Exec(`SELEC 1`)
	if _, ok := err.(sqlite3.Error); !ok {
		t.Errorf("statement error = %v (%T), want go-sqlite3's sqlite3.Error unchanged", err, err)
	}
}
