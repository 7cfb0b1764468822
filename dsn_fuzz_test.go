package cleolease

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseDSN checks that ParseDSN never panics and that whatever it
// accepts survives FormatDSN: parse(format(cfg)) succeeds and equals cfg on
// every DSN field, and format is stable. It also exercises the helpers the
// driver calls on a parsed Config.
func FuzzParseDSN(f *testing.F) {
	for _, tt := range testDSNs {
		f.Add(tt.in)
	}
	for _, tt := range invalidDSNs {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		c, err := ParseDSN(dsn)
		if err != nil {
			if c != nil {
				t.Fatalf("ParseDSN(%q) returned both a Config and %v", dsn, err)
			}
			return
		}
		formatted := c.FormatDSN()
		c2, err := ParseDSN(formatted)
		if err != nil {
			t.Fatalf("ParseDSN(%q) ok, but ParseDSN(FormatDSN() = %q): %v", dsn, formatted, err)
		}
		if dsnFields(c2) != dsnFields(c) {
			t.Fatalf("round trip of %q via %q:\n %+v\nwant\n %+v", dsn, formatted, dsnFields(c2), dsnFields(c))
		}
		if again := c2.FormatDSN(); again != formatted {
			t.Fatalf("FormatDSN not stable for %q: %q then %q", dsn, formatted, again)
		}
		if err := validate(c.Clone()); err != nil {
			t.Fatalf("validate of ParseDSN(%q): %v", dsn, err)
		}

		// go-sqlite3 must be able to read what it gets.
		withDefaults := sqliteDSNWithDefaults(c)
		if !strings.HasPrefix(withDefaults, c.SQLiteDSN) {
			t.Fatalf("sqliteDSNWithDefaults(%q) = %q changed the caller's bytes", c.SQLiteDSN, withDefaults)
		}
		if _, query, ok := strings.Cut(withDefaults, "?"); ok && withDefaults[0] != '?' {
			if _, err := url.ParseQuery(query); err != nil {
				t.Fatalf("go-sqlite3 could not parse the query of %q: %v", withDefaults, err)
			}
		}
		path, _, _ := location(c)
		if path == "" && !private(c) {
			t.Fatalf("ParseDSN(%q): a temporary database not taken as private", dsn)
		}
		if private(c) && (c.Migrations != "" || c.MigrationsFS != nil || c.Migrator != nil) {
			t.Fatalf("ParseDSN(%q) accepted migrations on a private database", dsn)
		}
	})
}
