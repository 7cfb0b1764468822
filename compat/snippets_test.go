package compat_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The documentation's code is compiled, and run where it is a program
// (snippets_extract_test.go finds it, snippets_build_test.go builds and
// runs it).
//
// Where the snippets come from:
//   - every fenced block of README.md, compat/README.md and docs/*.md. The
//     first word of its info string says what it is: "go" is Go and is
//     compiled; "go nocompile" is Go not meant to compile (say why in the
//     text around it); "go procs=N" is a program run as N processes at
//     once; any other word (sh, text, sql) is not Go, and a block of it
//     with "file=NAME" (a migration file) is written, as NAME, beside the
//     next Go snippet of the document. A fence with no info string is an
//     error, and so is a Go line that ends in "```" (a fence closed on the
//     code's last line is not closed, and a copy of the code carries the
//     backticks).
//   - every code block of a doc comment that go doc shows (a package's doc
//     and the docs of its exported declarations), in every package of the
//     repository. A doc comment has no info string, so its non-Go blocks
//     are marked by a directive line, which go doc hides and gofmt keeps
//     at the end of the comment:
//
//	//snippet:nocompile PREFIX
//
//     marks the code block of that comment whose first line starts with
//     PREFIX. A marker that matches no block is an error.
//
// How a Go snippet becomes a package (one per snippet, all built by one
// "go build" in a module that requires what compat requires):
//   - a snippet with a package clause is a file as it stands; a package
//     main with a func main is a program: it is built, then run in an
//     empty temporary directory, and must exit 0 within snippetRunTimeout.
//   - otherwise its leading import declarations are kept and the rest is
//     either declarations (placed after "package snippet") or statements
//     (placed in "func snippet() error { … return nil }"). A fragment's
//     missing imports are filled from snippetImports by the package names
//     it uses; a statement fragment may use the givens ctx, db, path and
//     sub without declaring them (snippetGivens), and the variables it
//     declares count as used. sqlc's generated code (sqlc_gen_test.go) is
//     beside every fragment that calls New.

// TestDocSnippets compiles every Go snippet of the documentation a user
// reads, and runs those that are programs.
func TestDocSnippets(t *testing.T) {
	var snips []snippet
	var problems []string
	mds, _ := filepath.Glob("../docs/*.md")
	for _, name := range append([]string{"../README.md", "README.md"}, mds...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s, p := markdownSnippets(filepath.Clean(name), string(b))
		snips, problems = append(snips, s...), append(problems, p...)
	}
	s, p := packageDocSnippets(t, "..")
	snips, problems = append(snips, s...), append(problems, p...)
	for _, p := range problems {
		t.Error(p)
	}
	byIndex, ran := checkSnippets(t, snips)
	compiled, skipped := 0, 0
	for i, s := range snips {
		for _, p := range byIndex[i] {
			t.Error(p)
		}
		switch {
		case s.isGo():
			compiled++
		case s.lang == "go":
			skipped++
			t.Logf("%s: marked nocompile", s.where)
		}
	}
	t.Logf("%d code blocks: %d Go snippets compiled, %d programs run, %d marked nocompile", len(snips), compiled, ran, skipped)
	if compiled < 15 || ran < 1 {
		t.Errorf("compiled %d Go snippets and ran %d programs; want at least 15 and 1 (is the extraction broken?)", compiled, ran)
	}
}

// TestSnippetCheckerCatchesBreakage: the checker reports each way a
// snippet can break, and passes the good ones.
func TestSnippetCheckerCatchesBreakage(t *testing.T) {
	const fence = "```"
	md := strings.Join([]string{
		fence + "go", `db, err := sql.Open("cleolease", "file:"+path)`, fence, // 0: good fragment
		fence + "go", `n := strings.Repeat("x", "y")`, fence, // 1: type error
		fence + "go", "package main", "", "import \"os\"", "", "func main() { os.Exit(3) }", fence, // 2: program that fails
		fence + "go procs=2", "package main", "", "func main() {}", fence, // 3: good program, two copies at once
		fence + "go nocompile", "this is not Go", fence, // 4: marked
		fence + "go", `err := goose.UpContext(ctx, db, ".")`, fence, // 5: good (fills goose)
		fence + "go", "func f() {", "}" + fence, "text", fence + "sh", "ls", fence, // 6: fence closed on the code line
		fence, "bare", fence, // a fence with no info string
		"",
	}, "\n")
	snips, fenceProblems := markdownSnippets("broken.md", md)
	src := "package p\n\n// F does nothing.\n//\n//\tcleolease status DB\n//\n// Then:\n//\n//\tx := undefinedThing\n//\n//snippet:nocompile cleolease status\n//snippet:nocompile nothing matches\nfunc F() {}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	ds, markerProblems := docSnippets(fset, []byte(src), f.Decls[0].(*ast.FuncDecl).Doc)
	if len(ds) != 2 || !ds[0].skip || ds[1].skip {
		t.Fatalf("doc snippets %+v: want 2, the first marked", ds)
	}
	if len(markerProblems) != 1 || !strings.Contains(markerProblems[0], "nothing matches") {
		t.Errorf("marker problems %q, want one naming the unmatched marker", markerProblems)
	}
	if len(fenceProblems) != 2 || !strings.Contains(fenceProblems[0], "ends in") || !strings.Contains(fenceProblems[1], "no info string") {
		t.Errorf("fence problems %q, want the code-line close and the bare fence", fenceProblems)
	}
	all := append(snips, ds...)
	problems, ran := checkSnippets(t, all)
	want := map[int]string{1: "does not compile", 2: "the program failed", 6: "does not parse", len(snips) + 1: "does not compile"}
	for i, s := range all {
		got := strings.Join(problems[i], "\n")
		if w, bad := want[i]; bad != (got != "") || bad && !strings.Contains(got, w) {
			t.Errorf("snippet %d (%s, %q): problems %q, want %q", i, s.where, s.code, got, w)
		}
	}
	if ran != 2 {
		t.Errorf("ran %d programs, want 2", ran)
	}
}
