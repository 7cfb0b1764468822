package core

import (
	"testing"

	"github.com/cleocode/cleolease/internal/sqlnames"
)

// Every SQL string literal the core runs on the application's connections
// names nothing a user's object can shadow (see package sqlnames): no
// table-valued pragma, the schema tables with their schema.
func TestEveryStatementNamesMain(t *testing.T) {
	findings, literals, err := sqlnames.Check(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
	if literals < 10 {
		t.Fatalf("only %d SQL literals found: is the test reading the package?", literals)
	}
}
