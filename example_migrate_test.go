package cleolease_test

import (
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/cleocode/cleolease"
)

//go:embed testdata/migrations/*.sql
var exampleMigrations embed.FS

// Migrations embedded in the program are registered under a name, which a
// DSN selects with _migrations — so they also reach DSN-only libraries
// such as GORM or sqlx. The first connection to the file runs the pending
// ones (once across all the processes that open it) before it is handed
// out.
func ExampleRegisterMigrations() {
	sub, err := fs.Sub(exampleMigrations, "testdata/migrations")
	if err != nil {
		log.Fatal(err)
	}
	cleolease.RegisterMigrations("example-app", sub)

	dir, err := os.MkdirTemp("", "cleolease-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := sql.Open("cleolease", "file:"+filepath.Join(dir, "app.db")+"?_migrations=example-app")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// The schema is there from the first statement on.
	if _, err := db.Exec(`INSERT INTO items (name) VALUES ('first')`); err != nil {
		log.Fatal(err) // a *cleolease.MigrationError if a migration failed
	}
	var version int
	var dirty bool
	if err := db.QueryRow(`SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("schema version %d, dirty %t\n", version, dirty)
	// Output: schema version 20, dirty false
}
