package compat_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestGoSQLite3Version: gorm.io/driver/sqlite, gorm and sqlx require older
// go-sqlite3 releases than cleolease does; the build must select exactly
// the one the core module requires (its go.mod), never a newer one that
// some client library might ask for. (Test binaries carry no dependency
// list in their build info, so this asks the go command.)
func TestGoSQLite3Version(t *testing.T) {
	core, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/mattn/go-sqlite3 (v\S+)`).FindSubmatch(core)
	if m == nil {
		t.Fatal("../go.mod does not require github.com/mattn/go-sqlite3")
	}
	want := string(m[1])
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(gobin, "list", "-m", "-f", "{{.Version}} {{.Replace}}", "github.com/mattn/go-sqlite3").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want+" <nil>" {
		t.Errorf("this module selects go-sqlite3 %q; the core module requires %s (unreplaced)", got, want)
	}
}
