// Package shim is copied by internal/ncrucessuite into the scratch package
// that runs ncruces's driver tests through cleolease-ncruces (renamed there
// to driver_test): it holds what the rewritten tests call in place of
// ncruces's driver.Open and of its memdb.TestDB. Its subpackages errutil
// and testcfg stand in for ncruces's internal packages of those names,
// which no other module may import. Nothing imports it.
package shim

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/ncruces"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
)

// suiteOpen stands in for ncruces's driver.Open (same signature):
// cleolease-ncruces's Open, with the same callbacks.
func suiteOpen(dsn string, fn ...func(*sqlite3.Conn) error) (*sql.DB, error) {
	return ncruces.Open(dsn, fn...)
}

// suiteFiles is true in the files pass: the runner sets
// CLEOLEASE_NCRUCESSUITE_FILES=1 for it.
var suiteFiles = os.Getenv("CLEOLEASE_NCRUCESSUITE_FILES") == "1"

// suiteTestDB stands in for memdb.TestDB: in the memdb pass it is
// memdb.TestDB (a memdb database the test's connections share, leased
// inside the process only); in the files pass it is a new file in a
// directory of its own under os.TempDir() (which the runner points into its
// scratch directory), as a file: URI with the same parameters, vfs=memdb
// left out, so the test runs on the file lease, with WAL.
func suiteTestDB(tb testing.TB, params ...url.Values) string {
	tb.Helper()
	if !suiteFiles {
		return memdb.TestDB(tb, params...)
	}
	dir, err := os.MkdirTemp("", "testdb-")
	if err != nil {
		tb.Fatal(err)
	}
	p := url.Values{}
	for _, v := range params {
		for k, v := range v {
			for _, v := range v {
				p.Add(k, v)
			}
		}
	}
	return (&url.URL{
		Scheme:   "file",
		OmitHost: true,
		Path:     filepath.ToSlash(filepath.Join(dir, "test.db")),
		RawQuery: p.Encode(),
	}).String()
}
