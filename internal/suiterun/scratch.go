package suiterun

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// ShimName is the file a command's shim/shim.go is written to in the
// scratch package.
const ShimName = "zz_cleolease_shim_test.go"

// Replace is a replace directive of the scratch module's go.mod: the module
// Path replaced by the directory Dir.
type Replace struct {
	Path, Dir string
}

// WriteGoMod writes the scratch module's go.mod and go.sum into dir: those
// of the module in the directory from (so every dependency resolves to the
// version that module builds with), renamed module, with a requirement of
// each path in require at v0.0.0 and the replace directives replace (in
// that order, after the requirements).
func WriteGoMod(dir, from, module string, require []string, replace []Replace) error {
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	args := []string{"mod", "edit", "-module=" + module}
	for _, p := range require {
		args = append(args, "-require="+p+"@v0.0.0")
	}
	for _, r := range replace {
		args = append(args, "-replace="+r.Path+"="+r.Dir)
	}
	_, err := GoOutput(dir, args...)
	return err
}

// LeftOut is what of a base's test files is not copied: a whole file (Decl
// empty) or a top-level declaration of it, and the reason (required).
type LeftOut struct {
	File, Decl, Reason string
}

// LeftOutByFile returns leftOut as the declarations to drop per file and
// the files to skip. A LeftOut without a reason is an error.
func LeftOutByFile(leftOut []LeftOut) (decls map[string]map[string]bool, files map[string]bool, err error) {
	decls = map[string]map[string]bool{}
	files = map[string]bool{}
	for _, l := range leftOut {
		if l.Reason == "" {
			return nil, nil, fmt.Errorf("leftout.go: %s %s has no reason", l.File, l.Decl)
		}
		if l.Decl == "" {
			files[l.File] = true
			continue
		}
		if decls[l.File] == nil {
			decls[l.File] = map[string]bool{}
		}
		decls[l.File][l.Decl] = true
	}
	return decls, files, nil
}

// RewriteFunc turns the test file name (its source src) into the scratch
// package's, leaving out the top-level declarations named in leaveOut.
type RewriteFunc func(name string, src []byte, leaveOut map[string]bool) ([]byte, error)

// CopyTests writes into dir, through rewrite, each *_test.go file of srcDir
// but the whole files leftOut names. It reports an error when leftOut
// names a file srcDir lacks; source names srcDir's package in it
// ("go-sqlite3").
func CopyTests(dir, srcDir, source string, leftOut []LeftOut, rewrite RewriteFunc) error {
	byFile, wholeFiles, err := LeftOutByFile(leftOut)
	if err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(srcDir, "*_test.go"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, path := range names {
		base := filepath.Base(path)
		if wholeFiles[base] {
			delete(wholeFiles, base)
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := rewrite(base, src, byFile[base])
		if err != nil {
			return err
		}
		delete(byFile, base)
		if err := os.WriteFile(filepath.Join(dir, base), out, 0o644); err != nil {
			return err
		}
	}
	for f := range wholeFiles {
		return fmt.Errorf("leftout.go names %s, which %s does not ship", f, source)
	}
	for f := range byFile {
		return fmt.Errorf("leftout.go names declarations in %s, which %s does not ship", f, source)
	}
	return nil
}

// ShimFile returns src, a command's shim/shim.go, as a file of package pkg
// headed by header (a "Code generated" comment and a blank line), without
// its package doc comment.
func ShimFile(src []byte, pkg, header string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "shim.go", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	f.Name = ast.NewIdent(pkg)
	f.Comments = slices.DeleteFunc(f.Comments, func(c *ast.CommentGroup) bool { return c == f.Doc })
	f.Doc = nil
	var buf bytes.Buffer
	buf.WriteString(header)
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
