package compat_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

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
	"metrics":       "github.com/cleocode/cleolease/metrics",
	"otel":          "go.opentelemetry.io/otel",
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
	// Every replace of a module of this repository (the root, the
	// nested base modules) points at its directory.
	mod = strings.ReplaceAll(mod, "=> ../", "=> "+root+string(filepath.Separator))
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
