package cleolease_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/cleocode/cleolease"
)

// BenchmarkUncontended compares one read-modify-write transaction in one
// process on raw go-sqlite3 (BEGIN IMMEDIATE, the same pragmas) and on
// cleolease (leased, fenced). benchstat can compare the two sub-benchmarks.
func BenchmarkUncontended(b *testing.B) {
	for _, bc := range []struct{ name, driver, query string }{
		{"raw", "sqlite3", "?_busy_timeout=30000&_journal_mode=WAL&_synchronous=NORMAL&_fk=1&_txlock=immediate"},
		{"cleolease", "cleolease", ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			db, err := sql.Open(bc.driver, "file:"+path+bc.query)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0)`); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
