package compat_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The documentation's code is compiled, and run where it is a program.
//
// Where the snippets come from:
//   - every fenced block of README.md, compat/README.md and docs/*.md. The
//     first word of its info string says what it is: "go" is Go and is
//     compiled; "go nocompile" is Go not meant to compile (say why in the
//     text around it); "go procs=N" is a program run as N processes at
//     once; any other word (sh, text, sql) is not Go, and a block of it
//     with "file=NAME" (a migration file) is written, as NAME, beside the
//     next Go snippet of the document. A fence
//     with no info string is an error, and so is a Go line that ends in
//     "```" (a fence closed on the code's last line is not closed, and a
//     copy of the code carries the backticks).
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

// snippetRunTimeout bounds one run of a program snippet.
const snippetRunTimeout = 2 * time.Minute

// snippetImports maps the package names a fragment may use without
// importing them to their import paths.
var snippetImports = map[string]string{
	"context":       "context",
	"errors":        "errors",
	"fmt":           "fmt",
	"fs":            "io/fs",
	"embed":         "embed",
	"os":            "os",
	"log":           "log",
	"slog":          "log/slog",
	"time":          "time",
	"sql":           "database/sql",
	"cleolease":     "github.com/cleocode/cleolease",
	"lease":         "github.com/cleocode/cleolease/lease",
	"migrate":       "github.com/cleocode/cleolease/migrate",
	"sqlite3":       "github.com/mattn/go-sqlite3",
	"sqlx":          "github.com/jmoiron/sqlx",
	"gorm":          "gorm.io/gorm",
	"sqlite":        "gorm.io/driver/sqlite",
	"bun":           "github.com/uptrace/bun",
	"sqlitedialect": "github.com/uptrace/bun/dialect/sqlitedialect",
	"dialect":       "entgo.io/ent/dialect",
	"entsql":        "entgo.io/ent/dialect/sql",
	"schema":        "entgo.io/ent/dialect/sql/schema",
	"field":         "entgo.io/ent/schema/field",
	"goose":         "github.com/pressly/goose/v3",
}

// snippetGivens is the file beside every statement fragment: the names a
// fragment may use as already there.
const snippetGivens = `package snippet

import (
	"context"
	"database/sql"
	"io/fs"
)

var (
	ctx  = context.Background() // a caller's context
	db   *sql.DB                // a pool opened with sql.Open("cleolease", …)
	path string                 // a database file's path
	sub  fs.FS                  // golang-migrate files
)
`

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

// snippetPackage turns a Go snippet into the files of a package: name →
// source. prog reports a program to run.
func snippetPackage(s snippet, sqlcGen string) (files map[string]string, prog bool, err error) {
	fset := token.NewFileSet()
	if f, perr := parser.ParseFile(fset, "snippet.go", s.code, parser.ParseComments); perr == nil {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
				prog = f.Name.Name == "main"
			}
		}
		return map[string]string{"snippet.go": s.code}, prog, nil
	}
	imports, rest := splitImports(s.code)
	files = map[string]string{}
	var f *ast.File
	var perr error
	if f, perr = parser.ParseFile(fset, "snippet.go", "package snippet\n"+imports+rest, parser.ParseComments); perr != nil {
		src := "package snippet\n" + imports + "\nfunc snippet() error {\n" + rest + "\nreturn nil\n}\n"
		// Without its comments: the "_ = v" lines added below have no
		// position, and a statement fragment has no directives.
		if f, err = parser.ParseFile(fset, "snippet.go", src, 0); err != nil {
			return nil, false, fmt.Errorf("neither declarations (%v) nor statements (%v)", perr, err)
		}
		markUsed(f)
		files["givens.go"] = snippetGivens
	}
	have := map[string]bool{}
	for _, im := range f.Imports {
		name := importName(strings.Trim(im.Path.Value, `"`))
		if im.Name != nil {
			name = im.Name.Name
		}
		have[name] = true
	}
	var add []string
	needSqlc := false
	for _, id := range f.Unresolved {
		if id.Name == "New" {
			needSqlc = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && !have[x.Name] {
			if p, ok := snippetImports[x.Name]; ok && !(files["givens.go"] != "" && isGiven(x.Name)) {
				have[x.Name] = true
				if importName(p) != x.Name {
					add = append(add, fmt.Sprintf("%s %q", x.Name, p))
				} else {
					add = append(add, fmt.Sprintf("%q", p))
				}
			}
		}
		return true
	})
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		return nil, false, err
	}
	src := b.String()
	if len(add) > 0 {
		sort.Strings(add)
		src = strings.Replace(src, "package snippet\n", "package snippet\n\nimport (\n\t"+strings.Join(add, "\n\t")+"\n)\n", 1)
	}
	files["snippet.go"] = src
	if needSqlc {
		files["sqlc.go"] = strings.Replace(sqlcGen, "package compat_test", "package snippet", 1)
	}
	return files, false, nil
}

// importName is the name an import path declares unless renamed: its last
// element, or the one before a major version suffix (goose/v3). The
// packages of snippetImports follow that rule.
func importName(p string) string {
	name := p[strings.LastIndex(p, "/")+1:]
	if q, ok := strings.CutSuffix(p, "/"+name); ok && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" && strings.Contains(q, "/") {
		return q[strings.LastIndex(q, "/")+1:]
	}
	return name
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

func isGiven(name string) bool {
	switch name {
	case "ctx", "db", "path", "sub":
		return true
	}
	return false
}

var leadingImport = regexp.MustCompile(`^\s*(?://[^\n]*\n\s*)*import\s*(?:\([^)]*\)|(?:[A-Za-z_.]\w*\s+)?"[^"]*")[^\n]*\n`)

// splitImports returns a fragment's leading import declarations and the
// rest.
func splitImports(code string) (imports, rest string) {
	rest = code
	for {
		m := leadingImport.FindString(rest)
		if m == "" {
			return imports, rest
		}
		imports += m
		rest = rest[len(m):]
	}
}

// markUsed adds "_ = v" after every statement that declares v in the
// fragment's function, so that a fragment may declare what it shows and not
// use it.
func markUsed(f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		blk, ok := n.(*ast.BlockStmt)
		if !ok {
			return true
		}
		var out []ast.Stmt
		for _, st := range blk.List {
			out = append(out, st)
			var names []*ast.Ident
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, e := range st.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							names = append(names, id)
						}
					}
				}
			case *ast.DeclStmt:
				if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, sp := range g.Specs {
						names = append(names, sp.(*ast.ValueSpec).Names...)
					}
				}
			}
			for _, id := range names {
				if id.Name != "_" {
					out = append(out, &ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("_")}, Tok: token.ASSIGN, Rhs: []ast.Expr{ast.NewIdent(id.Name)}})
				}
			}
		}
		blk.List = out
		return true
	})
}

var buildErrLine = regexp.MustCompile(`(?m)^(?:\./)?(s\d+)/`)

// checkSnippets builds every Go snippet and runs the programs among them.
// It returns the problems of each snippet (by index; none for a good one)
// and how many programs ran.
func checkSnippets(t *testing.T, snips []snippet) (problems map[int][]string, ran int) {
	t.Helper()
	problems = map[int][]string{}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	sqlcGen, err := os.ReadFile("sqlc_gen_test.go")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod := strings.Replace(string(gomod), "module github.com/cleocode/cleolease/compat", "module snippets", 1)
	mod = strings.Replace(mod, "=> ../", "=> "+root, 1)
	if mod == string(gomod) || !strings.Contains(mod, "=> "+root) {
		t.Fatal("compat/go.mod does not have the expected module line and replace directive")
	}
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", mod)
	write("go.sum", string(gosum))
	progs := map[int]bool{}
	sources := map[int]map[string]string{}
	for i, s := range snips {
		if !s.isGo() {
			continue
		}
		files, prog, err := snippetPackage(s, string(sqlcGen))
		if err != nil {
			problems[i] = append(problems[i], fmt.Sprintf("%s: does not parse as Go: %v", s.where, err))
			continue
		}
		sources[i] = files
		for name, src := range files {
			write(fmt.Sprintf("s%03d/%s", i, name), src)
		}
		for name, data := range s.files {
			write(fmt.Sprintf("s%03d/%s", i, name), data)
		}
		progs[i] = prog
	}
	if len(sources) == 0 {
		return problems, 0
	}
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+os.Getenv("GOFLAGS")+" -mod=mod")
		return cmd.CombinedOutput()
	}
	// One build of every package type-checks them all (with -o, go build
	// would build only the programs); the programs are then linked into bin.
	build := []string{"build"}
	if raceEnabled {
		build = append(build, "-race")
	}
	if out, err := goCmd(append(build, "./...")...); err != nil {
		attributed := false
		for _, sec := range strings.Split(string(out), "\n# ") {
			m := buildErrLine.FindStringSubmatch(sec)
			if m == nil {
				continue
			}
			var i int
			fmt.Sscanf(m[1], "s%d", &i)
			if _, ok := sources[i]; !ok {
				continue
			}
			attributed = true
			problems[i] = append(problems[i], fmt.Sprintf("%s: does not compile:\n%s\n--- compiled as:\n%s", snips[i].where, strings.TrimSpace(sec), numbered(sources[i])))
		}
		if !attributed {
			t.Fatalf("go build of the snippets failed, naming no snippet: %v\n%s", err, out)
		}
	}
	bin := filepath.Join(dir, "bin") + string(filepath.Separator)
	var mains []string
	for i := range sources {
		if progs[i] && len(problems[i]) == 0 {
			mains = append(mains, fmt.Sprintf("./s%03d", i))
		}
	}
	if len(mains) > 0 {
		if out, err := goCmd(append(append(build, "-o", bin), mains...)...); err != nil {
			t.Fatalf("go build -o of the programs %v: %v\n%s", mains, err, out)
		}
	}
	for i := range sources {
		if !progs[i] || len(problems[i]) > 0 {
			continue
		}
		ran++
		n := max(snips[i].procs, 1)
		ctx, cancel := context.WithTimeout(context.Background(), snippetRunTimeout)
		wd := t.TempDir()
		errs := make(chan string, n)
		for range n {
			go func() {
				run := exec.CommandContext(ctx, filepath.Join(bin, fmt.Sprintf("s%03d", i)))
				run.Dir = wd
				out, err := run.CombinedOutput()
				if err != nil {
					errs <- fmt.Sprintf("%s: the program failed (%v; %d copies at once, timeout %v):\n%s", snips[i].where, err, n, snippetRunTimeout, out)
					return
				}
				errs <- ""
			}()
		}
		for range n {
			if e := <-errs; e != "" {
				problems[i] = append(problems[i], e)
			}
		}
		cancel()
	}
	return problems, ran
}

func numbered(files map[string]string) string {
	var b strings.Builder
	for _, name := range []string{"snippet.go"} {
		for i, l := range strings.Split(files[name], "\n") {
			fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
		}
	}
	return b.String()
}

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
