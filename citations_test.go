package cleolease

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// privateCitation matches references to documents that are not in this
// repository (the design and research notes the project started from). A
// comment must send its reader only to files of the repository or to
// public sources.
var privateCitation = regexp.MustCompile(`DESIGN\b|\blease-anchors\b|\bstyle-anchors\b|\bcleo-lease-spec\b|\bresearch/|\bseeds/|\bshared/tools\b|/work/shared\b`)

// TestCommentsCiteOnlyReachableDocuments scans the comments of every .go
// file of the repository (every module in it) for such references.
func TestCommentsCiteOnlyReachableDocuments(t *testing.T) {
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		n++
		for _, g := range f.Comments {
			for _, c := range g.List {
				if m := privateCitation.FindString(c.Text); m != "" {
					t.Errorf("%s: comment cites %q, which is not in the repository: %s", fset.Position(c.Pos()), m, c.Text)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("scanned only %d .go files; is the test running from the module root?", n)
	}
}

// TestDocsCiteOnlyReachableDocuments: the Markdown documentation cites
// only what a clone holds or public sources, so a reader can rerun every
// measurement it quotes (no tools kept beside the repository).
func TestDocsCiteOnlyReachableDocuments(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	outside := regexp.MustCompile(`\.\./shared\b|/work/shared\b|\bshared/tools\b|\bcontention tool\b`)
	for _, name := range append([]string{"README.md", "compat/README.md"}, docs...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, which is not in the repository: %s", name, i+1, m, line)
			}
		}
	}
}
