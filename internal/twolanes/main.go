// Command twolanes measures issue 41's two-lane target: two processes
// run 300 ms transactions back to back on lane a, a third writes on lane b
// (with 50 ms between its transactions) and, a second in, "cleolease
// migrate up" applies a directory of migrations; it prints lane b's waits
// (begin to BeginTx's return) and the migration's wall time.
//
//	go build -o /tmp/cleolease ./cmd/cleolease
//	go run ./internal/twolanes -cli /tmp/cleolease
//
// -migrations names the golang-migrate files (default: two, in testdata). The
// database is a temporary file, WAL, synchronous=NORMAL, busy_timeout 5 s.
//
//snippet:nocompile go build
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cleocode/cleolease"
)

var (
	role       = flag.String("role", "", "internal: a or b")
	path       = flag.String("db", "", "internal: the database")
	duration   = flag.Duration("d", 6*time.Second, "how long the writers run")
	cli        = flag.String("cli", "", "the cleolease command, for migrate up (none: no migration)")
	migrations = flag.String("migrations", "internal/twolanes/testdata/migrations", "the migrations directory (two files by default)")
)

func dsn() string {
	return "file:" + *path + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000"
}

func main() {
	flag.Parse()
	switch *role {
	case "a":
		laneA()
	case "b":
		laneB()
	default:
		if err := parent(); err != nil {
			fmt.Fprintln(os.Stderr, "twolanes:", err)
			os.Exit(1)
		}
	}
}

// laneA runs 300 ms transactions on lane a until the duration ends.
func laneA() {
	db, err := sql.Open("cleolease", dsn())
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	defer db.Close()
	ctx := cleolease.WithLane(context.Background(), "app", "a")
	for end := time.Now().Add(*duration); time.Now().Before(end); {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			fmt.Println("a ERR", err)
			continue
		}
		tx.Exec(`INSERT INTO t(who) VALUES ('a')`)
		time.Sleep(300 * time.Millisecond) // the work inside the transaction
		if err := tx.Commit(); err != nil {
			fmt.Println("a ERR", err)
		}
	}
}

// laneB writes on lane b every 50 ms and prints its waits.
func laneB() {
	db, err := sql.Open("cleolease", dsn())
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	defer db.Close()
	db.Ping()
	ctx := cleolease.WithLane(context.Background(), "app", "b")
	var waits []time.Duration
	errs := 0
	for end := time.Now().Add(*duration); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		t0 := time.Now()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			errs++
			fmt.Println("b ERR", err)
			continue
		}
		waits = append(waits, time.Since(t0))
		tx.Exec(`INSERT INTO t(who) VALUES ('b')`)
		if err := tx.Commit(); err != nil {
			errs++
			fmt.Println("b ERR", err)
		}
	}
	slices.Sort(waits)
	if len(waits) == 0 {
		fmt.Printf("lane b: no transaction, %d errors\n", errs)
		return
	}
	fmt.Printf("lane b: %d transactions, wait p50 %v, max %v, %d errors\n", len(waits),
		waits[len(waits)/2].Round(time.Millisecond), waits[len(waits)-1].Round(time.Millisecond), errs)
}

func parent() error {
	dir, err := os.MkdirTemp("", "twolanes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	*path = filepath.Join(dir, "app.db")
	db, err := sql.Open("cleolease", dsn())
	if err != nil {
		return err
	}
	if _, err := db.Exec(`CREATE TABLE t(who TEXT)`); err != nil {
		return err
	}
	db.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, r := range []string{"a", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _ := exec.Command(self, "-role", r, "-db", *path, "-d", duration.String()).CombinedOutput()
			fmt.Print(string(out))
		}()
	}
	if *cli != "" {
		time.Sleep(time.Second) // (the load is under way)
		src, _ := filepath.Abs(*migrations)
		t0 := time.Now()
		out, err := exec.Command(*cli, "migrate", *path, "--source", "file://"+src, "up").CombinedOutput()
		took := time.Since(t0)
		if err != nil {
			fmt.Printf("migrate up: FAILED after %v: %v\n%s", took.Round(time.Millisecond), err, out)
		} else {
			fmt.Printf("migrate up: %v (%s)\n", took.Round(time.Millisecond), strings.Join(strings.Fields(string(out)), " "))
		}
	}
	wg.Wait()
	return nil
}
