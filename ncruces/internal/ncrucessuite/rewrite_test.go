package main

import (
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/suiterun"
)

// A package driver file: its unqualified Open and driverName become
// cleolease-ncruces's, its internal imports the scratch module's stand-ins,
// memdb.TestDB the shim's, and a left-out declaration goes with the
// imports only it used.
func TestRewriteFileInPackage(t *testing.T) {
	src := `package driver

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/ncruces/go-sqlite3/internal/errutil"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
)

func TestA(t *testing.T) {
	db, _ := Open(memdb.TestDB(t), nil)
	db2, _ := sql.Open(driverName, ":memory:")
	_, _, _ = db, db2, string(errutil.TailErr)
}

// TestB uses an unexported name.
func TestB(t *testing.T) { _ = slices.Equal(namedValues(nil), nil) }
`
	out, err := rewriteFile("x_test.go", []byte(src), map[string]bool{"TestB": true}, map[string]bool{"errutil": true})
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"package driver_test",
		`db, _ := suiteOpen(suiteTestDB(t), nil)`,
		`sql.Open("cleolease-ncruces", ":memory:")`,
		`"ncrucessuite/internal/errutil"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"TestB", `"slices"`, "memdb\"", "driverName"} {
		if strings.Contains(got, gone) {
			t.Errorf("rewritten file still has %q:\n%s", gone, got)
		}
	}
}

// A package driver_test file: ncruces's driver.Open and sql.Open("sqlite3")
// become cleolease-ncruces's; the driver package stays for the rest
// (Savepoint).
func TestRewriteFileExternal(t *testing.T) {
	src := `package driver_test

import (
	"database/sql"

	"github.com/ncruces/go-sqlite3/driver"
)

func Example_x() {
	db, _ := driver.Open("file:/x.db?vfs=memdb")
	db2, _ := sql.Open("sqlite3", "x.db")
	tx, _ := db.Begin()
	_ = driver.Savepoint(tx)
	_ = db2
}
`
	out, err := rewriteFile("x_test.go", []byte(src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{`suiteOpen("file:/x.db?vfs=memdb")`, `sql.Open("cleolease-ncruces", "x.db")`, "driver.Savepoint(tx)"} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, got)
		}
	}
}

// What the rewrite cannot adapt is an error, not a test left on ncruces.
func TestRewriteFileRefuses(t *testing.T) {
	for name, src := range map[string]string{
		"other driver":     "package driver_test\nimport \"database/sql\"\nfunc f() { sql.Open(\"sqlite\", \"x\") }\n",
		"register":         "package driver_test\nimport \"database/sql\"\nfunc f() { sql.Register(\"x\", nil) }\n",
		"no stand-in":      "package driver\nimport \"github.com/ncruces/go-sqlite3/internal/util\"\nvar _ = util.X\n",
		"driverName value": "package driver\nvar _ = driverName\n",
		"Open value":       "package driver\nvar _ = Open\n",
		"other package":    "package sqlite3\n",
	} {
		if _, err := rewriteFile("x_test.go", []byte(src), nil, map[string]bool{"errutil": true}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := rewriteFile("x_test.go", []byte("package driver\n"), map[string]bool{"TestGone": true}, nil); err == nil {
		t.Error("a left-out declaration the file lacks: no error")
	}
}

func TestKnownFailuresFileParses(t *testing.T) {
	if _, err := suiterun.ParseKnown(knownFailuresText, passes); err != nil {
		t.Errorf("known_failures.txt: %v", err)
	}
	if _, _, err := suiterun.LeftOutByFile(leftOut); err != nil {
		t.Errorf("leftout.go: %v", err)
	}
}
