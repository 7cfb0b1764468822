package lease

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
)

// testBase is the base the tests open engines with: a plain go-sqlite3
// driver.
var testBase = mattn.For(nil)

// Multi-process tests re-execute the test binary with CLEOLEASE_ROLE set;
// TestMain runs the role instead of the tests. Children talk to the parent
// over stdout lines and take orders from stdin lines.
func TestMain(m *testing.M) {
	if role := os.Getenv("CLEOLEASE_ROLE"); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

func newDB(t testing.TB) string {
	t.Helper()
	p := filepath.Join(testdir.New(t), "lease.db")
	db, err := sql.Open("sqlite3", "file:"+p+"?_journal_mode=WAL&_busy_timeout=30000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
		INSERT OR IGNORE INTO counter VALUES (1, 0);
		CREATE TABLE IF NOT EXISTS grants(id INTEGER PRIMARY KEY, who TEXT, epoch INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return p
}

func openEngine(t testing.TB, path string, mod func(*Options)) *Engine {
	t.Helper()
	o := Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: 50 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	e, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// needDoorbell skips a test of the doorbell's datagrams (registrations,
// grants) in a build without a datagram transport (cleolease_pollwake).
func needDoorbell(t testing.TB) {
	t.Helper()
	if platform.PollWake {
		t.Skip("no datagram transport in this build (cleolease_pollwake)")
	}
}

// child is a re-executed test binary playing a role.
type child struct{ *proctest.Child }

// startChild runs role in a new process with CLEOLEASE_DB=path and the
// extra environment; the child is killed at the end of the test.
func startChild(t testing.TB, role, path string, env ...string) *child {
	t.Helper()
	return &child{proctest.Start(t, append([]string{"CLEOLEASE_ROLE=" + role, "CLEOLEASE_DB=" + path}, env...)...)}
}

// expect reads the child's next line and checks its prefix; it returns
// the rest of the line.
func (c *child) expect(prefix string) string {
	c.T.Helper()
	return c.Expect(prefix)
}

func (c *child) send(line string) {
	c.T.Helper()
	c.Send(line)
}

func (c *child) wait() error { return c.Cmd.Wait() }

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	proctest.Eventually(t, what, cond)
}

func queueLen(t testing.TB, path, scope, lane string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM _writer_queue WHERE scope = ? AND lane = ?`, scope, lane).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openRole opens a child role's engine of path (TTL one hour, Linger
// linger, the sidecar directory CLEOLEASE_SIDECAR_DIR names) and a plain
// go-sqlite3 pool whose transactions begin IMMEDIATE; when either fails
// it prints "ERR …" and reports false.
func openRole(path string, linger time.Duration) (*Engine, *sql.DB, bool) {
	e, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: linger,
		SidecarDir: os.Getenv("CLEOLEASE_SIDECAR_DIR")})
	if err != nil {
		fmt.Println("ERR", err)
		return nil, nil, false
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000&_txlock=immediate")
	if err != nil {
		e.Close()
		fmt.Println("ERR", err)
		return nil, nil, false
	}
	return e, db, true
}

// runRole is the body of a child process. Roles:
//
//	hold:   acquire (scope "s", lane "l", CLEOLEASE_PRIO), print "held EPOCH",
//	        wait for a line on stdin, then run a fenced write and print
//	        "commit ok" or "commit ERR", release, print "released", exit.
//	wait:   like hold, but first print "queued" once its queue row exists
//	        is not observable from inside; the parent polls the queue. On
//	        grant it records CLEOLEASE_NAME in table grants and releases at
//	        once.
//	quit:   wait for the lane until a line on stdin cancels the wait, print
//	        "gaveup canceled" (or "gaveup ERR" if the error is not the
//	        context's) and stay alive until the next line.
//	count:  CLEOLEASE_N read-modify-write increments under the lease.
//
// CLEOLEASE_WAIT (a duration) bounds the roles' waits (an hour otherwise):
// at the bound Acquire fails with ErrUnavailable, printed "ERR …".
// CLEOLEASE_NO_FALLBACK (non-empty) turns the waiters' fallback poll off
// (noFallback): they look only when something rings.
func runRole(role string) int {
	if run := extraRoles[role]; run != nil {
		return run()
	}
	path := os.Getenv("CLEOLEASE_DB")
	prio, _ := strconv.Atoi(os.Getenv("CLEOLEASE_PRIO"))
	linger := 50 * time.Millisecond
	if role == "pingpong" {
		linger = 0
	}
	if v := os.Getenv("CLEOLEASE_LINGER"); v != "" {
		linger, _ = time.ParseDuration(v)
	}
	noFallback.Store(os.Getenv("CLEOLEASE_NO_FALLBACK") != "")
	if v := os.Getenv("CLEOLEASE_FAIL_WANTS"); v != "" {
		n, _ := strconv.Atoi(v)
		failWants(int32(n))
	}
	e, db, ok := openRole(path, linger)
	if !ok {
		return 1
	}
	defer e.Close()
	defer db.Close()
	ctx := context.Background()
	opts := AcquireOptions{Priority: prio, Wait: time.Hour, Require: true}
	if v := os.Getenv("CLEOLEASE_WAIT"); v != "" {
		opts.Wait, _ = time.ParseDuration(v)
	}
	stdin := bufio.NewScanner(os.Stdin)
	switch role {
	case "pingpong":
		return runPingpong(e)
	case "hold":
		h, err := e.Acquire(ctx, "s", "l", opts)
		if err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		fmt.Println("held", h.Epoch())
		stdin.Scan()
		if err := fencedWrite(ctx, db, h, "hold"); err != nil {
			fmt.Println("commit ERR", err)
		} else {
			fmt.Println("commit ok")
		}
		h.Release()
		fmt.Println("released")
		stdin.Scan()
	case "wait":
		h, err := e.Acquire(ctx, "s", "l", opts)
		if err != nil {
			var le *Error
			holder := ""
			if errors.As(err, &le) {
				holder = le.Holder
			}
			fmt.Println("ERR", err, "(waited on:", holder, "; doorbell bound:", e.bell.p().bell != nil, ")")
			return 1
		}
		if err := fencedWrite(ctx, db, h, os.Getenv("CLEOLEASE_NAME")); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		h.Release()
		fmt.Println("granted", h.Epoch())
	case "quit":
		// Wait for the lane until a line on stdin cancels the wait; then
		// print "gaveup" and stay alive (not waiting) until the next line.
		qctx, cancel := context.WithCancel(ctx)
		go func() {
			stdin.Scan()
			cancel()
		}()
		h, err := e.Acquire(qctx, "s", "l", opts)
		if err == nil {
			h.Release()
			fmt.Println("granted", h.Epoch())
			return 0
		}
		if errors.Is(err, context.Canceled) {
			fmt.Println("gaveup canceled")
		} else {
			fmt.Println("gaveup", err)
		}
		stdin.Scan()
	case "rate":
		// Increment for CLEOLEASE_DUR with CLEOLEASE_HOLD of work inside
		// each transaction; print the number of commits.
		dur, _ := time.ParseDuration(os.Getenv("CLEOLEASE_DUR"))
		hold, _ := time.ParseDuration(os.Getenv("CLEOLEASE_HOLD"))
		stdin.Scan()
		n := 0
		var trace [][3]int64
		for end := time.Now().Add(dur); time.Now().Before(end); n++ {
			t0 := monoNow()
			h, err := e.Acquire(ctx, "s", "l", opts)
			if err != nil {
				fmt.Println("ERR", err)
				return 1
			}
			trace = append(trace, [3]int64{h.Epoch(), t0, monoNow()})
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				fmt.Println("ERR", err)
				return 1
			}
			time.Sleep(hold)
			tx.Exec(`UPDATE counter SET n = n + 1 WHERE id = 1`)
			tx.Commit()
			tr := monoNow()
			h.Release()
			trace = append(trace, [3]int64{-h.Epoch(), tr, monoNow() - tr})
		}
		fmt.Println("commits", n)
		if os.Getenv("CLEOLEASE_TRACE") != "" {
			out, _ := json.Marshal(trace)
			fmt.Println("trace", string(out))
		}
	case "count":
		n, _ := strconv.Atoi(os.Getenv("CLEOLEASE_N"))
		for i := 0; i < n; i++ {
			h, err := e.Acquire(ctx, "s", "l", opts)
			if err != nil {
				fmt.Println("ERR", err)
				return 1
			}
			err = increment(ctx, db, h)
			h.Release()
			if err != nil {
				fmt.Println("ERR", err)
				return 1
			}
		}
		fmt.Println("done")
	default:
		fmt.Println("ERR unknown role", role)
		return 2
	}
	return 0
}

// extraRoles are roles that test files of their own define (registered
// from their init functions), run instead of runRole's.
var extraRoles = map[string]func() int{}

// fencedWrite records who wrote under which epoch, fenced.
func fencedWrite(ctx context.Context, db *sql.DB, h *Hold, who string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE", nil); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO grants(who, epoch) VALUES ('"+who+"', "+strconv.FormatInt(h.Epoch(), 10)+")", nil); err != nil {
			c.ExecContext(ctx, "ROLLBACK", nil)
			return err
		}
		if err := h.Fence(ctx, c); err != nil {
			c.ExecContext(ctx, "ROLLBACK", nil)
			return err
		}
		_, err := c.ExecContext(ctx, "COMMIT", nil)
		return err
	})
}

func increment(ctx context.Context, db *sql.DB, h *Hold) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
		return err
	}
	return tx.Commit()
}

// atoiEpoch parses an epoch a child reported (-1 when it is not a number).
func atoiEpoch(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
