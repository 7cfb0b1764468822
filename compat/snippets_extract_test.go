package compat_test

import (
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// snippet is one code block of the documentation.
type snippet struct {
	where string // file:line of the block's first code line
	lang  string // first word of the info string; "go" for doc comments
	skip  bool   // "go nocompile", or a doc-comment block marked so
	procs int    // a program's copies run at once ("go procs=N"); 1 when 0
	code  string
	// files are the blocks with "file=NAME" in their info string that
	// precede this Go snippet (after the previous one): name → content,
	// written beside it (migration files for a go:embed).
	files map[string]string
}

func (s snippet) isGo() bool { return s.lang == "go" && !s.skip }

var fenceOpen = regexp.MustCompile("^ {0,3}(```+|~~~+)[ \t]*(.*)$")

// markdownSnippets returns the fenced blocks of a Markdown text, and the
// problems of its fences.
func markdownSnippets(name, text string) (snips []snippet, problems []string) {
	lines := strings.Split(text, "\n")
	pending := map[string]string{}
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence, info := m[1], strings.Fields(m[2])
		start := i + 1
		var code []string
		closed := false
		for i++; i < len(lines); i++ {
			l := strings.TrimRight(lines[i], " \t")
			if strings.HasPrefix(strings.TrimLeft(l, " "), fence[:3]) && strings.Trim(strings.TrimLeft(l, " "), fence[:1]) == "" && len(strings.TrimLeft(l, " ")) >= len(fence) {
				closed = true
				break
			}
			code = append(code, lines[i])
		}
		where := fmt.Sprintf("%s:%d", name, start+1)
		if !closed {
			problems = append(problems, fmt.Sprintf("%s: the fence opened on line %d is never closed", where, start))
			break
		}
		if len(info) == 0 {
			problems = append(problems, fmt.Sprintf("%s: a fence with no info string; say what the block is (go, go nocompile, sh, text)", where))
			continue
		}
		s := snippet{where: where, lang: info[0], code: strings.Join(code, "\n") + "\n"}
		for _, w := range info[1:] {
			switch {
			case s.lang == "go" && w == "nocompile":
				s.skip = true
			case s.lang == "go" && strings.HasPrefix(w, "procs="):
				if _, err := fmt.Sscanf(w, "procs=%d", &s.procs); err != nil || s.procs < 1 {
					problems = append(problems, fmt.Sprintf("%s: bad %q in the info string", where, w))
				}
			case s.lang != "go" && strings.HasPrefix(w, "file="):
				f := filepath.Clean(strings.TrimPrefix(w, "file="))
				if filepath.IsAbs(f) || strings.HasPrefix(f, "..") {
					problems = append(problems, fmt.Sprintf("%s: %q must name a file inside the snippet's directory", where, w))
					continue
				}
				pending[f] = s.code
			}
		}
		if s.lang == "go" && len(pending) > 0 {
			s.files, pending = pending, map[string]string{}
		}
		if s.lang == "go" {
			for j, l := range code {
				if strings.HasSuffix(strings.TrimRight(l, " \t"), fence[:3]) {
					problems = append(problems, fmt.Sprintf("%s:%d: a Go line ends in %q: the fence must close on a line of its own", name, start+1+j, fence[:3]))
				}
			}
		}
		snips = append(snips, s)
	}
	return snips, problems
}

// markerDirective is the doc-comment marker of a code block that is not Go.
var markerDirective = regexp.MustCompile(`^//snippet:nocompile[ \t]+(.+?)\s*$`)

// docSnippets returns the code blocks of a doc comment (cg) of the file
// src, with their markers applied, and the problems of its markers.
func docSnippets(fset *token.FileSet, src []byte, cg *ast.CommentGroup) (snips []snippet, problems []string) {
	var markers []string
	for _, c := range cg.List {
		if m := markerDirective.FindStringSubmatch(c.Text); m != nil {
			markers = append(markers, m[1])
		}
	}
	used := make([]bool, len(markers))
	var p comment.Parser
	for _, b := range p.Parse(cg.Text()).Content {
		code, ok := b.(*comment.Code)
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(code.Text, "\n")
		s := snippet{lang: "go", code: code.Text}
		pos := fset.Position(cg.Pos())
		s.where = fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
		for _, c := range cg.List { // the line of the block's first code line
			if strings.TrimSpace(strings.TrimPrefix(c.Text, "//")) == strings.TrimSpace(first) {
				s.where = fmt.Sprintf("%s:%d", pos.Filename, fset.Position(c.Pos()).Line)
				break
			}
		}
		for i, m := range markers {
			if strings.HasPrefix(strings.TrimSpace(first), m) {
				s.skip, used[i] = true, true
			}
		}
		snips = append(snips, s)
	}
	for i, m := range markers {
		if !used[i] {
			problems = append(problems, fmt.Sprintf("%s: marker //snippet:nocompile %s matches no code block", fset.Position(cg.Pos()), m))
		}
	}
	return snips, problems
}

// packageDocSnippets returns the code blocks of the doc comments go doc
// shows (package docs, exported declarations) of every package under root.
//
// The prose of those comments must be Go doc-comment syntax, which go doc
// shows as it stands: a backtick or a Markdown "**" outside a code block is
// a problem too.
func packageDocSnippets(t *testing.T, root string) (snips []snippet, problems []string) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		f, err := parser.ParseFile(fset, rel, src, parser.ParseComments)
		if err != nil {
			return err
		}
		var groups []*ast.CommentGroup
		if f.Doc != nil {
			groups = append(groups, f.Doc)
		}
		if f.Name.Name != "main" {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Doc != nil && d.Name.IsExported() {
						groups = append(groups, d.Doc)
					}
				case *ast.GenDecl:
					if d.Doc != nil && exportsAny(d) {
						groups = append(groups, d.Doc)
					}
					for _, sp := range d.Specs {
						switch sp := sp.(type) {
						case *ast.TypeSpec:
							if sp.Doc != nil && sp.Name.IsExported() {
								groups = append(groups, sp.Doc)
							}
						case *ast.ValueSpec:
							if sp.Doc != nil {
								groups = append(groups, sp.Doc)
							}
						}
					}
				}
			}
		}
		for _, cg := range groups {
			s, p := docSnippets(fset, src, cg)
			snips, problems = append(snips, s...), append(problems, p...)
			problems = append(problems, markdownInDoc(fset, cg)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snips, problems
}

// markdownInDoc reports Markdown in the prose of a doc comment: go doc
// shows backticks and "**" as they are.
func markdownInDoc(fset *token.FileSet, cg *ast.CommentGroup) (problems []string) {
	var p comment.Parser
	var prose func(bs []comment.Block)
	var texts func(ts []comment.Text)
	var b strings.Builder
	texts = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case comment.Plain:
				b.WriteString(string(t))
			case comment.Italic:
				b.WriteString(string(t))
			case *comment.Link:
				texts(t.Text)
			case *comment.DocLink:
				texts(t.Text)
			}
		}
		b.WriteString("\n")
	}
	prose = func(bs []comment.Block) {
		for _, blk := range bs {
			switch blk := blk.(type) {
			case *comment.Paragraph:
				texts(blk.Text)
			case *comment.Heading:
				texts(blk.Text)
			case *comment.List:
				for _, it := range blk.Items {
					prose(it.Content)
				}
			}
		}
	}
	prose(p.Parse(cg.Text()).Content)
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, "`") || strings.Contains(l, "**") {
			problems = append(problems, fmt.Sprintf("%s: Markdown in a doc comment (go doc shows it as it is; use Go doc syntax): %s", fset.Position(cg.Pos()), l))
		}
	}
	return problems
}

// exportsAny reports whether a declaration declares an exported name.
func exportsAny(d *ast.GenDecl) bool {
	for _, sp := range d.Specs {
		switch sp := sp.(type) {
		case *ast.TypeSpec:
			if sp.Name.IsExported() {
				return true
			}
		case *ast.ValueSpec:
			for _, n := range sp.Names {
				if n.IsExported() {
					return true
				}
			}
		}
	}
	return false
}
