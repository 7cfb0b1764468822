package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/suiterun"
)

const sampleTest = `//go:build cgo

package sqlite3

import (
	"database/sql"
	"os"
	"testing"
)

// TestKept opens go-sqlite3 by name.
func TestKept(t *testing.T) {
	db, _ := sql.Open("sqlite3", ":memory:")
	db.Close()
	db, _ = sql.Open(driverName, "x.db")
	db.Close()
}

// TestRegistered registers a driver with a hook.
func TestRegistered(t *testing.T) {
	sql.Register("hooked", &SQLiteDriver{ConnectHook: nil})
	db, _ := sql.Open("hooked", "y.db")
	db.Close()
}

// TestDropped uses an unexported name.
func TestDropped(t *testing.T) {
	os.Remove(unexported)
}
`

func TestRewriteFile(t *testing.T) {
	exported := map[string]bool{"SQLiteDriver": true, "Error": true}
	out, err := rewriteFile("sample_test.go", []byte(sampleTest), map[string]bool{"TestDropped": true}, exported)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"//go:build cgo\n",
		"package sqlite3_test\n",
		`. "github.com/mattn/go-sqlite3"`,
		`sql.Open("cleolease", suiteDSN(":memory:"))`,
		`sql.Open("cleolease", suiteDSN("x.db"))`,
		`suiteRegister("hooked", &SQLiteDriver{ConnectHook: nil})`,
		`sql.Open("hooked", suiteDSN("y.db"))`,
		"// TestKept opens go-sqlite3 by name.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"TestDropped", "unexported name", `"os"`, "sql.Register"} {
		if strings.Contains(got, gone) {
			t.Errorf("rewritten file still has %q:\n%s", gone, got)
		}
	}
}

func TestRewriteFileDotImportOnlyWhenUsed(t *testing.T) {
	src := "package sqlite3\n\nimport \"testing\"\n\nfunc TestPlain(t *testing.T) { t.Log(TempFilename(t)) }\n"
	out, err := rewriteFile("plain_test.go", []byte(src), nil, map[string]bool{"SQLiteDriver": true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "go-sqlite3") {
		t.Errorf("a file using none of go-sqlite3's names got its import (unused, it does not compile):\n%s", out)
	}
}

func TestRewriteFileRejectsStaleLeaveOut(t *testing.T) {
	_, err := rewriteFile("sample_test.go", []byte(sampleTest), map[string]bool{"TestGone": true}, nil)
	if err == nil || !strings.Contains(err.Error(), "TestGone") {
		t.Fatalf("rewriteFile with a left-out name the file does not declare: err = %v, want one naming TestGone", err)
	}
}

func TestKnownFailuresFileParses(t *testing.T) {
	known, err := suiterun.ParseKnown(knownFailuresText, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := suiterun.LeftOutByFile(leftOut); err != nil {
		t.Fatal(err)
	}
	for _, k := range known {
		if !strings.HasPrefix(k.Test, "Test") {
			t.Errorf("known_failures.txt lists %q, not a test name", k.Test)
		}
	}
}

// TestReadmeNamesKnownFailures keeps README.md's "Differences from
// go-sqlite3" naming every test known_failures.txt lists.
func TestReadmeNamesKnownFailures(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Differences from go-sqlite3\n")
	if !ok {
		t.Fatal(`README.md has no "Differences from go-sqlite3" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	known, err := suiterun.ParseKnown(knownFailuresText, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range known {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(k.Test) + `\b`).MatchString(section) {
			t.Errorf("known_failures.txt lists %s; README.md's Differences section does not name it", k.Test)
		}
	}
}
