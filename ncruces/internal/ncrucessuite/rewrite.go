package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"

	"github.com/cleocode/cleolease/internal/suiterun"
)

const (
	// ncrucesPath is ncruces's module path; driverPath its driver package,
	// memdbPath its memdb VFS and internalPrefix its internal packages.
	ncrucesPath    = "github.com/ncruces/go-sqlite3"
	driverPath     = ncrucesPath + "/driver"
	memdbPath      = ncrucesPath + "/vfs/memdb"
	internalPrefix = ncrucesPath + "/internal/"

	// scratchModule is the scratch module's path: its internal/<name>
	// packages stand in for ncruces's (shim/<name>).
	scratchModule = "ncrucessuite"

	// cleoleaseDriverName is the name cleolease-ncruces registers.
	cleoleaseDriverName = "cleolease-ncruces"
)

// rewriteFile turns one of ncruces's driver test files (package driver or
// driver_test) into a file of the scratch package driver_test that runs
// through cleolease-ncruces, and returns its formatted source. It
//   - renames the package to driver_test;
//   - drops the top-level declarations named in leaveOut (tests of
//     ncruces's unexported names), and the imports that leaves unused;
//   - rewrites sql.Open("sqlite3", dsn) — or sql.Open(driverName, dsn),
//     driverName being the unexported variable holding "sqlite3" — to
//     sql.Open("cleolease-ncruces", dsn), and ncruces's driver.Open(dsn,
//     fn...) (Open(dsn, fn...) inside package driver) to suiteOpen(dsn,
//     fn...), cleolease-ncruces's Open with the same callbacks;
//   - rewrites memdb.TestDB(tb, params...) to suiteTestDB(tb, params...),
//     which the files pass turns into a file;
//   - imports the scratch module's stand-ins (shim/<name>) for ncruces's
//     internal packages, which another module may not import.
//
// It reports an error when a name in leaveOut is not declared in the file
// (so the list cannot outlive the code it describes), when sql.Open or
// sql.Register names another driver, when a file imports an internal
// package that has no stand-in (internals), and when a call of ncruces's
// driver.Open or a use of driverName is left.
func rewriteFile(name string, src []byte, leaveOut, internals map[string]bool) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	inPkg := f.Name.Name == "driver"
	if !inPkg && f.Name.Name != "driver_test" {
		return nil, fmt.Errorf("%s: package %s, want driver or driver_test", name, f.Name.Name)
	}
	f.Name.Name = "driver_test"

	if err := suiterun.DropDecls(f, name, leaveOut); err != nil {
		return nil, err
	}

	imports := map[string]string{} // local name -> path
	for _, is := range f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		if strings.HasPrefix(p, internalPrefix) {
			pkg := strings.TrimPrefix(p, internalPrefix)
			if !internals[pkg] {
				return nil, fmt.Errorf("%s: imports %s, for which shim/ has no stand-in", name, p)
			}
			is.Path.Value = strconv.Quote(scratchModule + "/internal/" + pkg)
		}
		imports[suiterun.ImportName(is)] = p
	}
	isPkg := func(e ast.Expr, path string) bool {
		x, ok := e.(*ast.Ident)
		return ok && x.Obj == nil && imports[x.Name] == path
	}

	var rerr error
	fail := func(format string, args ...any) {
		if rerr == nil {
			rerr = fmt.Errorf(name+": "+format, args...)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			switch fun := n.Fun.(type) {
			case *ast.SelectorExpr:
				switch {
				case isPkg(fun.X, "database/sql") && fun.Sel.Name == "Open" && len(n.Args) == 2:
					if !suiterun.IsDriverName(n.Args[0]) {
						fail("%s: sql.Open of a driver other than ncruces's", fset.Position(n.Pos()))
					}
					n.Args[0] = &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(cleoleaseDriverName)}
				case isPkg(fun.X, "database/sql") && fun.Sel.Name == "Register":
					fail("%s: sql.Register, which the suite does not adapt", fset.Position(n.Pos()))
				case isPkg(fun.X, driverPath) && fun.Sel.Name == "Open":
					n.Fun = ast.NewIdent("suiteOpen")
				case isPkg(fun.X, memdbPath) && fun.Sel.Name == "TestDB":
					n.Fun = ast.NewIdent("suiteTestDB")
				}
			case *ast.Ident:
				if inPkg && fun.Name == "Open" && fun.Obj == nil {
					n.Fun = ast.NewIdent("suiteOpen")
				}
			}
		}
		return true
	})
	if rerr != nil {
		return nil, rerr
	}
	// What is left of ncruces's driver must not open through it.
	fields := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			fields[n.Sel] = true
			if isPkg(n.X, driverPath) && n.Sel.Name == "Open" {
				fail("%s: driver.Open left unrewritten", fset.Position(n.Pos()))
			}
		case *ast.Ident:
			if !fields[n] && n.Obj == nil && (n.Name == "driverName" || inPkg && n.Name == "Open") {
				fail("%s: %s left unrewritten", fset.Position(n.Pos()), n.Name)
			}
		}
		return true
	})
	if rerr != nil {
		return nil, rerr
	}

	suiterun.DropUnusedImports(f)
	return suiterun.Format(fset, f)
}
