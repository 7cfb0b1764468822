package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
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

	seen := map[string]bool{}
	kept := f.Decls[:0]
	for _, d := range f.Decls {
		if n := declName(d); n != "" && leaveOut[n] {
			seen[n] = true
			continue
		}
		kept = append(kept, d)
	}
	f.Decls = kept
	for n := range leaveOut {
		if !seen[n] {
			return nil, fmt.Errorf("%s: %s is listed as left out but not declared there", name, n)
		}
	}
	// Comments of dropped declarations would otherwise float into what
	// remains; keep only those still inside a kept node or outside any
	// declaration (the file's header and build constraint).
	f.Comments = keptComments(f)

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
		imports[importName(is)] = p
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
					if !isNcrucesName(n.Args[0]) {
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

	dropUnusedImports(f)

	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, err
	}
	return format.Source(buf.Bytes())
}

// declName names a top-level function (not a method) or a single-name
// var, const or type declaration; "" for anything else.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return d.Name.Name
		}
	case *ast.GenDecl:
		if len(d.Specs) != 1 {
			return ""
		}
		switch s := d.Specs[0].(type) {
		case *ast.ValueSpec:
			if len(s.Names) == 1 {
				return s.Names[0].Name
			}
		case *ast.TypeSpec:
			return s.Name.Name
		}
	}
	return ""
}

// keptComments returns the comment groups of f that lie before the first
// declaration or inside (or as the doc of) a kept declaration.
func keptComments(f *ast.File) []*ast.CommentGroup {
	type span struct{ from, to token.Pos }
	var spans []span
	for _, d := range f.Decls {
		from := d.Pos()
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
		}
		spans = append(spans, span{from, d.End()})
	}
	first := f.Name.End()
	var out []*ast.CommentGroup
	for _, c := range f.Comments {
		if c.End() <= first {
			out = append(out, c)
			continue
		}
		for _, s := range spans {
			if c.Pos() >= s.from && c.End() <= s.to {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// isNcrucesName reports whether e names ncruces's driver: the literal
// "sqlite3", or the driver package's variable driverName (an identifier
// the file does not declare).
func isNcrucesName(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING && e.Value == `"sqlite3"`
	case *ast.Ident:
		return e.Name == "driverName" && e.Obj == nil
	}
	return false
}

// dropUnusedImports removes the named and default imports no selector in
// f refers to any more (after declarations were dropped). Blank and dot
// imports are kept.
func dropUnusedImports(f *ast.File) {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil {
				used[x.Name] = true
			}
		}
		return true
	})
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		specs := g.Specs[:0]
		for _, s := range g.Specs {
			is := s.(*ast.ImportSpec)
			if used[importName(is)] || (is.Name != nil && (is.Name.Name == "_" || is.Name.Name == ".")) {
				specs = append(specs, s)
			}
		}
		g.Specs = specs
	}
	f.Imports = nil
}

// importName is the name an import binds: its explicit name, or the last
// element of its path without a "go-" prefix (github.com/ncruces/go-sqlite3
// is package sqlite3), which is true of every package the tests import.
func importName(is *ast.ImportSpec) string {
	if is.Name != nil {
		return is.Name.Name
	}
	p, _ := strconv.Unquote(is.Path.Value)
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return strings.TrimPrefix(p, "go-")
}
