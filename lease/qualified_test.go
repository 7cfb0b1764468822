package lease

import (
	"testing"

	"github.com/cleocode/cleolease/internal/sqlnames"
)

// Every SQL string literal of the package names nothing a user's object
// can shadow on the caller's connection: the lease tables and the schema
// table with main. (SQLite looks in TEMP first, so a TEMP table of that
// name would answer in place of the file's: issue 28 item 5), and no
// table-valued pragma (a table or view named pragma_data_version defeated
// the recommit fence: issue 38 item 3).
func TestEveryStatementNamesMain(t *testing.T) {
	findings, literals, err := sqlnames.Check(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
	if literals < 40 {
		t.Fatalf("only %d SQL literals found: is the test reading the package?", literals)
	}
}
