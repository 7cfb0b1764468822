package cleolease_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/internal/workload"
)

// BenchmarkUncontended compares one read-modify-write transaction (a
// SELECT and an UPDATE, smaller than workload.Counter's) in one process on
// raw go-sqlite3 (the workload.TxLock peer: BEGIN IMMEDIATE, the same
// pragmas) and on cleolease (leased, fenced). benchstat can compare the
// two sub-benchmarks.
func BenchmarkUncontended(b *testing.B) {
	for _, bc := range []struct {
		name string
		peer workload.Peer
	}{
		{"raw", workload.TxLock},
		{"cleolease", workload.Cleolease},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(testdir.New(b), "bench.db")
			dsn, err := bc.peer.DSN(path, "")
			if err != nil {
				b.Fatal(err)
			}
			db, err := sql.Open(bc.peer.DriverName(), dsn)
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

// BenchmarkOpenClose measures the sql.Open-per-request pattern: each
// iteration opens the database, runs one piece of work and closes it —
// "read" is three SELECTs (go-sqlite3's TestStress), "write" one
// read-modify-write transaction — on raw go-sqlite3 (workload.TxLock) and
// on cleolease. benchstat compares the sub-benchmarks (ns/op is one cycle).
func BenchmarkOpenClose(b *testing.B) {
	for _, work := range []string{"read", "write"} {
		for _, bc := range []struct {
			name string
			peer workload.Peer
		}{
			{"raw", workload.TxLock},
			{"cleolease", workload.Cleolease},
		} {
			b.Run(work+"/"+bc.name, func(b *testing.B) {
				path := filepath.Join(testdir.New(b), "bench.db")
				dsn, err := bc.peer.DSN(path, "")
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				cycle := func() error {
					db, err := sql.Open(bc.peer.DriverName(), dsn)
					if err != nil {
						return err
					}
					defer db.Close()
					if work == "read" {
						var n int
						for range 3 {
							if err := db.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
								return err
							}
						}
						return db.Close()
					}
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					defer tx.Rollback()
					var n int
					if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
						return err
					}
					if err := tx.Commit(); err != nil {
						return err
					}
					return db.Close()
				}
				db, err := sql.Open(bc.peer.DriverName(), dsn)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := db.Exec(`CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0)`); err != nil {
					b.Fatal(err)
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if err := cycle(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
