package suiterun

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/token"
	"strconv"
	"strings"
)

// DropDecls removes from f, the test file name, the top-level declarations
// named in leaveOut (a function, not a method, or a single-name var, const
// or type declaration), and the comments they leave behind. It reports an
// error when a name in leaveOut is not declared in the file, so that a list
// cannot outlive the code it describes.
func DropDecls(f *ast.File, name string, leaveOut map[string]bool) error {
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
			return fmt.Errorf("%s: %s is listed as left out but not declared there", name, n)
		}
	}
	// Comments of dropped declarations would otherwise float into what
	// remains; keep only those still inside a kept node or outside any
	// declaration (the file's header and build constraint).
	f.Comments = keptComments(f)
	return nil
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

// IsDriverName reports whether e names the base's driver as the tests
// write it: the string literal "sqlite3", or the base package's variable
// driverName (an identifier the file does not declare).
func IsDriverName(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING && e.Value == `"sqlite3"`
	case *ast.Ident:
		return e.Name == "driverName" && e.Obj == nil
	}
	return false
}

// DropUnusedImports removes the named and default imports no selector in
// f refers to any more (after declarations were dropped). Blank and dot
// imports are kept.
func DropUnusedImports(f *ast.File) {
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
			if used[ImportName(is)] || (is.Name != nil && (is.Name.Name == "_" || is.Name.Name == ".")) {
				specs = append(specs, s)
			}
		}
		g.Specs = specs
	}
	f.Imports = nil
}

// ImportName is the name an import binds: its explicit name, or the last
// element of its path without a "go-" prefix (github.com/ncruces/go-sqlite3
// is package sqlite3), which is true of every package the bases' tests
// import.
func ImportName(is *ast.ImportSpec) string {
	if is.Name != nil {
		return is.Name.Name
	}
	p, _ := strconv.Unquote(is.Path.Value)
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return strings.TrimPrefix(p, "go-")
}

// Format returns f's source, formatted.
func Format(fset *token.FileSet, f *ast.File) ([]byte, error) {
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, err
	}
	return format.Source(buf.Bytes())
}
