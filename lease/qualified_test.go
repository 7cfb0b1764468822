package lease

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unqualified finds a lease table or index named in SQL without its
// schema: SQLite looks in temp first, so a TEMP table of that name on the
// caller's connection would answer in place of the file's (issue 28 item
// 5). The table of CREATE INDEX … ON takes no schema (it is the index's).
var unqualified = regexp.MustCompile(`(?i)\b(FROM|UPDATE|INTO|JOIN|EXISTS|TABLE|INDEX IF NOT EXISTS)\s+(_writer_\w+|ux_writer_\w+|ix_writer_\w+|sqlite_master)\b`)

// Every SQL string literal of the package names the lease tables (and
// sqlite_master) with main.
func TestEveryStatementNamesMain(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || !strings.Contains(lit.Value, "_writer_") {
				return true
			}
			seen++
			if m := unqualified.FindString(lit.Value); m != "" {
				t.Errorf("%s: %q names a lease table without main.", fset.Position(lit.Pos()), m)
			}
			return true
		})
	}
	if seen < 20 {
		t.Fatalf("only %d SQL literals naming the lease tables found: is the test reading the package?", seen)
	}
}
