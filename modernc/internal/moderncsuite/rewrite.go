package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cleocode/cleolease/internal/suiterun"
)

// basePath is modernc's import path, dot-imported by every rewritten file
// that uses one of its exported names.
const basePath = "modernc.org/sqlite"

// rewriteFile turns one of modernc's test files (package sqlite) into a file
// of the external test package sqlite_test that runs through cleolease, and
// returns its formatted source. It
//   - renames the package to sqlite_test and, when the file uses one of
//     modernc's exported names (exported), dot-imports modernc, so they need
//     no qualifier;
//   - drops the top-level declarations named in leaveOut (tests that use
//     modernc's unexported names), and the imports that leaves unused;
//   - rewrites sql.Open("sqlite", dsn) — or sql.Open(driverName, dsn),
//     driverName being modernc's unexported constant holding "sqlite" —
//     to sql.Open("cleolease-modernc", suiteDSN(dsn)), and wraps the DSN of
//     every other sql.Open the same way (suiteDSN, in the generated shim,
//     gives a private in-memory DSN a temporary file);
//   - rewrites sql.Register(name, d) to suiteRegister(name, d), which
//     registers a cleolease driver with d as Config.BaseDriver;
//   - rewrites modernc's NewConnector(dsn) to suiteNewConnector(dsn), a
//     cleolease connector over the registered "sqlite" driver;
//   - wraps the callback of every x.Raw(f) in suiteRaw(f), which hands f
//     modernc's connection (modernc.Conn's ModerncConn), as the README tells
//     an application reaching modernc's connection to do.
//
// It reports an error when a name in leaveOut is not declared in the file,
// so the list cannot outlive the code it describes.
func rewriteFile(name string, src []byte, leaveOut, exported map[string]bool) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	// A file already of package sqlite_test (pcachepool_test.go, built
	// with a tag only) is rewritten all the same.
	if f.Name.Name != "sqlite" && f.Name.Name != "sqlite_test" {
		return nil, fmt.Errorf("%s: package %s, want sqlite or sqlite_test", name, f.Name.Name)
	}
	f.Name.Name = "sqlite_test"

	if err := suiterun.DropDecls(f, name, leaveOut); err != nil {
		return nil, err
	}

	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch {
		case isSQLCall(call, "Open") && len(call.Args) == 2:
			if isBaseName(call.Args[0]) {
				call.Args[0] = &ast.BasicLit{Kind: token.STRING, Value: `"cleolease-modernc"`}
			}
			call.Args[1] = &ast.CallExpr{Fun: ast.NewIdent("suiteDSN"), Args: []ast.Expr{call.Args[1]}}
		case isSQLCall(call, "Register"):
			call.Fun = ast.NewIdent("suiteRegister")
		case isUnresolvedCall(call, "NewConnector"):
			call.Fun = ast.NewIdent("suiteNewConnector")
		case isMethodCall(call, "Raw") && len(call.Args) == 1:
			call.Args[0] = &ast.CallExpr{Fun: ast.NewIdent("suiteRaw"), Args: []ast.Expr{call.Args[0]}}
		}
		return true
	})

	suiterun.DropUnusedImports(f)
	if usesAny(f, exported) {
		addDotImport(f)
	}
	return suiterun.Format(fset, f)
}

// isUnresolvedCall reports whether call is fn(...), fn an identifier the
// file does not declare (one of modernc's package-level names).
func isUnresolvedCall(call *ast.CallExpr, fn string) bool {
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == fn && id.Obj == nil
}

// isMethodCall reports whether call is x.fn(...), x not a package name the
// file imports (sql.Conn.Raw is the only Raw modernc's tests call).
func isMethodCall(call *ast.CallExpr, fn string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != fn {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return !ok || x.Obj != nil
}

// isBaseName reports whether e names modernc's driver: the literal
// "sqlite", or modernc's package-level driverName (an identifier the file
// does not declare).
func isBaseName(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING && e.Value == `"sqlite"`
	case *ast.Ident:
		return e.Name == "driverName" && e.Obj == nil
	}
	return false
}

// usesAny reports whether f refers to a name in names through an
// identifier it does not declare itself (selectors' field names and
// composite literals' keys aside).
func usesAny(f *ast.File, names map[string]bool) bool {
	skip := map[*ast.Ident]bool{}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			skip[n.Sel] = true
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok {
				skip[k] = true
			}
		case *ast.Ident:
			if !skip[n] && n.Obj == nil && names[n.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

// exportedNames returns the exported top-level names declared in the
// package's non-test Go files in dir, whatever their build constraints.
func exportedNames(dir string) (map[string]bool, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					}
				}
			}
		}
	}
	for n := range names {
		if !ast.IsExported(n) {
			delete(names, n)
		}
	}
	return names, nil
}

// isSQLCall reports whether call is sql.<fn>(...), sql being the
// database/sql package under its own name.
func isSQLCall(call *ast.CallExpr, fn string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != fn {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "sql" && x.Obj == nil
}

// addDotImport adds `import . "modernc.org/sqlite"` as a
// declaration of its own after the package clause.
func addDotImport(f *ast.File) {
	imp := &ast.GenDecl{Tok: token.IMPORT, Specs: []ast.Spec{&ast.ImportSpec{
		Name: ast.NewIdent("."),
		Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(basePath)},
	}}}
	f.Decls = append([]ast.Decl{imp}, f.Decls...)
}
