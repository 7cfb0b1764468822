package cleolease_test

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

func init() { roles["rd-write-and-wait"] = roleWriteAndWait }

// roleWriteAndWait opens CLEOLEASE_DSN, writes one row, says "ready" and
// keeps the database open until a line arrives on stdin.
func roleWriteAndWait() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		say("ERR", err)
		return 1
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES (1)`); err != nil {
		say("ERR", err)
		return 1
	}
	say("ready")
	bufio.NewScanner(os.Stdin).Scan()
	return 0
}

// A directory that holds an open database can be removed as under
// go-sqlite3 (issue 39): nothing creates a file in it behind the user's
// back. Go tests do this whenever a database outlives the test body
// (t.TempDir's cleanup runs while the handle is open); it failed 5–7
// times in 10 with "directory not empty", the heartbeat goroutine having
// created a new sidecar on the file watch's report of the first unlink.
// Ten rounds each: the database open in this process, and in another.
func TestRemoveDirectoryOfAnOpenDatabase(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses to remove a database SQLite holds open (no FILE_SHARE_DELETE), under go-sqlite3 too")
	}
	for _, where := range []string{"this process", "another process"} {
		t.Run(where, func(t *testing.T) {
			for i := 0; i < 10; i++ {
				dir := filepath.Join(testdir.New(t), "app")
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				dsn := "file:" + filepath.Join(dir, "app.db") + "?_lease_linger=1h"
				var release func()
				if where == "this process" {
					db := openLeased(t, dsn)
					if _, err := db.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES (1)`); err != nil {
						t.Fatal(err)
					}
					release = func() { db.Close() }
				} else {
					c := startChild(t, "rd-write-and-wait", dsn)
					c.expect("ready")
					release = func() { c.send("done"); c.Cmd.Wait() }
				}
				err := os.RemoveAll(dir)
				var left []string
				if entries, _ := os.ReadDir(dir); len(entries) > 0 {
					for _, e := range entries {
						left = append(left, e.Name())
					}
				}
				release()
				if err != nil {
					t.Fatalf("round %d: RemoveAll with the database open: %v (left %v)", i, err, left)
				}
				if _, err := os.Stat(dir); err == nil {
					t.Fatalf("round %d: the directory is back after the database closed: %v", i, fmt.Sprint(left))
				}
			}
		})
	}
}
