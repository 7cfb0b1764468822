package cleolease_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

func init() {
	roles["turn-hold"] = roleTurnHold
	roles["turn-write"] = roleTurnWrite
}

// roleTurnHold opens CLEOLEASE_DSN, begins a transaction on lane
// CLEOLEASE_LANE, writes a row, says "BEGUN", commits when told "commit"
// and says "DONE".
func roleTurnHold() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	ctx := cleolease.WithLane(context.Background(), "app", os.Getenv("CLEOLEASE_LANE"))
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		_, err = tx.Exec(`INSERT INTO t(who) VALUES ('hold')`)
	}
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("BEGUN")
	var line string
	if _, err := fmt.Scanln(&line); err != nil || line != "commit" {
		fmt.Println("ERR order", line, err)
		return 1
	}
	if err := tx.Commit(); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("DONE")
	return 0
}

// roleTurnWrite opens CLEOLEASE_DSN, says "READY" and writes one row in a
// transaction on lane CLEOLEASE_LANE: "OK", or "ERR" and the error.
func roleTurnWrite() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	ctx := cleolease.WithLane(context.Background(), "app", os.Getenv("CLEOLEASE_LANE"))
	fmt.Println("READY")
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		if _, err = tx.Exec(`INSERT INTO t(who) VALUES ('write')`); err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
	}
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("OK")
	return 0
}

// TestLanesTakeTheWriteTurn: a writer of another lane waits for a
// transaction of another process in the kernel, on the file's write turn,
// and then writes — where, without the turn, its BEGIN IMMEDIATE meets
// SQLite's write lock and, with a busy_timeout of 1 ms, fails with
// "database is locked". The test waits until the kernel lists the writer
// as blocked on the turn (/proc/locks) before the holder commits, so the
// two overlap whatever the scheduling.
func TestLanesTakeTheWriteTurn(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "app.db")
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=1"
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t(who TEXT)`); err != nil {
		t.Fatal(err)
	}
	holder := startChild(t, "turn-hold", dsn, "CLEOLEASE_LANE=a")
	holder.expect("BEGUN")
	writer := startChild(t, "turn-write", dsn, "CLEOLEASE_LANE=b")
	writer.expect("READY")
	turnFile := platform.SidecarPath(path)
	if platform.Portable {
		turnFile = filepath.Join(path+"-cleolease.d", "turn") // platform.LocksDir
	}
	fi, err := os.Stat(turnFile)
	if err != nil {
		t.Fatal(err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	eventually(t, "the lane-b writer blocked on the write turn in /proc/locks", func() bool {
		return blockedOn(t, ino)
	})
	holder.send("commit")
	holder.expect("DONE")
	writer.expect("OK")
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows: %d, %v; want 2", n, err)
	}
}

// blockedOn reports whether /proc/locks lists a waiter ("->") blocked on a
// lock of the file with inode ino.
func blockedOn(t *testing.T, ino uint64) bool {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[1] != "->" {
			continue
		}
		// "N: -> OFDLCK ADVISORY WRITE pid MAJ:MIN:INODE start end"
		if parts := strings.Split(f[6], ":"); len(parts) == 3 && parts[2] == fmt.Sprint(ino) {
			return true
		}
	}
	return false
}
