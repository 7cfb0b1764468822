// Package sqlnames checks the SQL a package runs on connections it does
// not own for names a user's object can shadow. SQLite resolves an
// unqualified table name in TEMP first, then main, then each attached
// database, and only then a table-valued pragma (pragma_data_version,
// pragma_table_info, …), so a table or view of the application's can
// answer in place of the file's lease tables or a pragma. Statements that
// name tables with their schema (main._writer_leases, main.sqlite_master,
// temp.sqlite_master) and PRAGMA statements (PRAGMA main.data_version)
// cannot be shadowed.
//
// It is a test helper: the lease and internal/core packages' tests run
// Check over their own source files.
package sqlnames

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var (
	// sqlLike is a string literal that holds SQL: it starts with a
	// statement's first keyword.
	sqlLike = regexp.MustCompile(`(?is)^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|CREATE|DROP|ALTER|PRAGMA|EXPLAIN|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b`)
	// tableValuedPragma is a pragma's table-valued function.
	tableValuedPragma = regexp.MustCompile(`(?i)\bpragma_[a-z_]+`)
	// unqualified is a lease table or index, or the schema table, named
	// without its schema (the table of CREATE INDEX … ON takes none: it
	// is the index's).
	unqualified = regexp.MustCompile(`(?i)\b(FROM|UPDATE|INTO|JOIN|EXISTS|TABLE|INDEX IF NOT EXISTS)\s+(_writer_\w+|ux_writer_\w+|ix_writer_\w+|sqlite_master|sqlite_schema)\b`)
)

// Finding is one name in one literal that can be shadowed.
type Finding struct {
	Pos  token.Position
	Name string
	Why  string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %q %s", f.Pos, f.Name, f.Why) }

// Check parses the non-test Go files of dir and returns every finding in
// their SQL string literals (constants and literals alike, each as
// written), and how many SQL literals it read.
func Check(dir string) (findings []Finding, literals int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, 0, err
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, 0, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			if err != nil || !sqlLike.MatchString(text) {
				return true
			}
			literals++
			pos := fset.Position(lit.Pos())
			for _, m := range tableValuedPragma.FindAllString(text, -1) {
				findings = append(findings, Finding{pos, m, "is a table-valued pragma: a table or view of that name stands in for it; use the statement PRAGMA main.…"})
			}
			for _, m := range unqualified.FindAllString(text, -1) {
				findings = append(findings, Finding{pos, m, "names a table without its schema: TEMP is searched first; write main. (or temp.)"})
			}
			return true
		})
	}
	return findings, literals, nil
}
