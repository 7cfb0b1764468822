package cleolease_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// copyFile copies the file at src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// A database written through cleolease by a process that has exited, then
// copied (cp), moved (mv) or exported (VACUUM INTO) to another directory,
// is writable at once from a new process (issue 39): its record of where
// the liveness files are kept names the original's file, or a recorder
// that has gone. It was refused with ErrSidecarDir for a TTL.
func TestCopiedOrMovedDatabaseIsWritableAtOnce(t *testing.T) {
	for _, how := range []string{"cp", "mv", "VACUUM INTO"} {
		t.Run(how, func(t *testing.T) {
			root := testdir.New(t)
			dir1, dir2 := filepath.Join(root, "dir1"), filepath.Join(root, "dir2")
			for _, d := range []string{dir1, dir2} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			src, dst := filepath.Join(dir1, "app.db"), filepath.Join(dir2, "app.db")
			c := startChild(t, "rd-write-and-wait", "file:"+src)
			c.expect("ready")
			c.send("exit")
			if err := c.Cmd.Wait(); err != nil {
				t.Fatalf("the writer's exit: %v", err)
			}
			switch how {
			case "cp":
				copyFile(t, src, dst)
			case "mv":
				if err := os.Rename(src, dst); err != nil {
					t.Fatal(err)
				}
			case "VACUUM INTO":
				raw, err := sql.Open("sqlite3", "file:"+src)
				if err != nil {
					t.Fatal(err)
				}
				_, err = raw.Exec(`VACUUM INTO ?`, dst)
				raw.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			db := openLeased(t, "file:"+dst+"?_lease_mode=require&_lease_wait=5s")
			// An explicit lease: its claim transaction checks the record (a
			// lone write may claim a free lane inside its own transaction,
			// which judges no holder and checks none).
			l, err := cleolease.AcquireLease(context.Background(), db)
			if err != nil {
				if errors.Is(err, cleolease.ErrSidecarDir) {
					t.Fatalf("the %s copy refused: %v", how, err)
				}
				t.Fatal(err)
			}
			_, err = db.ExecContext(l.Context(context.Background()), `INSERT INTO t VALUES (2)`)
			l.Release()
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
				t.Fatalf("rows %d (%v), want 2", n, err)
			}
		})
	}
}
