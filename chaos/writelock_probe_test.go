//go:build unix

package chaos

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/testdir"
)

// TestWriteLockProbeNamesTheWriter: the probe process names this process
// while one of its go-sqlite3 connections is inside BEGIN IMMEDIATE, and
// nobody before and after, in WAL mode and with a rollback journal.
func TestWriteLockProbeNamesTheWriter(t *testing.T) {
	for _, journal := range []string{"", "DELETE"} {
		t.Run("journal="+journal, func(t *testing.T) {
			path := filepath.Join(testdir.New(t), "probe.db")
			mode := "WAL"
			if journal != "" {
				mode = journal
			}
			db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode="+mode)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE t (x)`); err != nil {
				t.Fatal(err)
			}
			p, err := startWriteLockProbe(path, journal)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			expect := func(when string, want int64) {
				t.Helper()
				got, err := p.holder(nil)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if got != want {
					t.Fatalf("%s: the probe says pid %d holds the write lock, want %d", when, got, want)
				}
			}
			expect("before", 0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			expect("inside BEGIN IMMEDIATE", int64(os.Getpid()))
			if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
				t.Fatal(err)
			}
			expect("after COMMIT", 0)
		})
	}
}
