package compat_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

// TestReadmeSnippets keeps README.md in step with the code the examples
// run: every use* function and model type of example_test.go must appear
// verbatim in one of the README's go blocks, and every import path the
// README names must be one the examples import.
func TestReadmeSnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1) {
		blocks = append(blocks, string(m[1]))
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	inREADME := func(code string) bool {
		for _, b := range blocks {
			if strings.Contains(b, code) {
				return true
			}
		}
		return false
	}
	want := 0
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !strings.HasPrefix(d.Name.Name, "use") {
				continue
			}
			want++
			if !inREADME(text(d)) {
				t.Errorf("README.md has no go block holding func %s exactly as in example_test.go", d.Name.Name)
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				continue
			}
			want++
			if !inREADME(text(d)) {
				t.Errorf("README.md has no go block holding %s exactly as in example_test.go", strings.SplitN(text(d), "\n", 2)[0])
			}
		}
	}
	if want < 5 {
		t.Errorf("found %d snippets in example_test.go, want at least 5 (3 functions, 2 models)", want)
	}
	imported := map[string]bool{}
	for _, im := range f.Imports {
		imported[strings.Trim(im.Path.Value, `"`)] = true
	}
	for _, b := range blocks {
		for _, m := range regexp.MustCompile(`(?m)^\s*(?:_ |import )?"([^"]+)"\s*$`).FindAllStringSubmatch(b, -1) {
			if !imported[m[1]] {
				t.Errorf("README.md imports %q, which example_test.go does not", m[1])
			}
		}
	}
	if !bytes.Contains(readme, []byte("go test -race")) {
		t.Error("README.md does not say how to run the tests")
	}
}

// TestSqlxBindType backs the README's sqlx note: sqlx does not know the
// name "cleolease" and gives it the UNKNOWN bind type, which leaves "?"
// alone and compiles named parameters to "?": the same as QUESTION, which
// sqlx.BindDriver would set.
func TestSqlxBindType(t *testing.T) {
	if bt := sqlx.BindType("cleolease"); bt != sqlx.UNKNOWN && bt != sqlx.QUESTION {
		t.Fatalf("sqlx.BindType(cleolease) = %d, want UNKNOWN or QUESTION", bt)
	}
	_, dsn := tempDSN(t)
	db, err := sqlx.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if q := db.Rebind("a = ? AND b = ?"); q != "a = ? AND b = ?" {
		t.Errorf("Rebind gave %q", q)
	}
	q, args, err := db.BindNamed("a = :x AND b = :y", map[string]any{"x": 1, "y": 2})
	if err != nil || q != "a = ? AND b = ?" || len(args) != 2 {
		t.Errorf("BindNamed gave %q %v %v", q, args, err)
	}
	q, args, err = sqlx.In("id IN (?)", []int{1, 2, 3})
	if err != nil || db.Rebind(q) != "id IN (?, ?, ?)" || len(args) != 3 {
		t.Errorf("In gave %q %v %v", q, args, err)
	}
}
