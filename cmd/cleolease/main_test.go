package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/internal/workload"
	"github.com/cleocode/cleolease/lease"
)

// The tests run the command as a subprocess: the test binary itself,
// re-executed with CLEOLEASE_CMD_TEST=cli, runs the command line it is
// given (and the demo's workers re-execute it the same way). With
// CLEOLEASE_CMD_TEST=hold it plays a lease holder instead (see roleHold).
func TestMain(m *testing.M) {
	switch os.Getenv("CLEOLEASE_CMD_TEST") {
	case "cli":
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	case "hold":
		os.Exit(roleHold())
	case "tx":
		os.Exit(roleTx())
	}
	os.Exit(m.Run())
}

// childEnv is the environment of the test's subprocesses. Under -race a
// process sleeps a second at exit unless told not to (GORACE
// atexit_sleep_ms), which would make every command take a second.
func childEnv() []string {
	return append(os.Environ(), proctest.GoraceNoExitSleep())
}

type result struct {
	stdout, stderr string
	code           int
}

// cli runs the command with args and returns what it printed and its exit
// status.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(childEnv(), "CLEOLEASE_CMD_TEST=cli")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("cleolease %s: %v", strings.Join(args, " "), err)
	}
	return r
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// roleHold takes the lease of (HOLD_SCOPE, HOLD_LANE) on CLEOLEASE_DSN with
// priority HOLD_PRIORITY, says "HELD epoch", and releases it when told
// "release" on stdin. It exits when stdin closes.
func roleHold() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	ctx := cleolease.WithLane(context.Background(), os.Getenv("HOLD_SCOPE"), os.Getenv("HOLD_LANE"))
	if p := os.Getenv("HOLD_PRIORITY"); p != "" {
		n, _ := strconv.Atoi(p)
		ctx = cleolease.WithPriority(ctx, n)
	}
	if err := db.PingContext(ctx); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("OPEN")
	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("HELD", l.Epoch())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "release" {
			l.Release()
			fmt.Println("RELEASED")
		}
	}
	l.Release()
	return 0
}

// holder is a child process playing roleHold.
type holder struct{ *proctest.Child }

// startHolder starts a child process that takes the lease of (main, lane)
// on path with the given priority; it is killed at the end of the test.
func startHolder(t *testing.T, path, lane string, priority int) *holder {
	t.Helper()
	return &holder{proctest.Start(t, proctest.GoraceNoExitSleep(), "CLEOLEASE_CMD_TEST=hold",
		"CLEOLEASE_DSN=file:"+path+"?_lease_wait=10m&_lease_mode=require",
		"HOLD_SCOPE=main", "HOLD_LANE="+lane, "HOLD_PRIORITY="+strconv.Itoa(priority))}
}

func (h *holder) pid() int64 { return int64(h.Cmd.Process.Pid) }

func (h *holder) expect(prefix string) string {
	h.T.Helper()
	return h.Expect(prefix)
}

func (h *holder) send(line string) {
	h.T.Helper()
	h.Send(line)
}

// eventually polls cond until it holds, failing after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	proctest.Poll(t, what, time.Minute, 5*time.Millisecond, cond)
}

// queued counts the waiters of (main, lane), read-only.
func queued(t *testing.T, path, lane string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM _writer_queue WHERE scope = 'main' AND lane = ?`, lane).Scan(&n); err != nil {
		return -1 // not created yet
	}
	return n
}

func statusJSON(t *testing.T, path string) statusReport {
	t.Helper()
	r := cli(t, "status", path, "--json")
	if r.code != 0 {
		t.Fatalf("status --json: %s", r)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json does not parse: %v\n%s", err, r.stdout)
	}
	return rep
}

// flat is s with every run of white space one space: output wrapped to
// width columns, compared as text.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// pidAt is the index of "pid N" in a status output, -1 if it is not there.
func pidAt(out string, pid int64) int {
	loc := regexp.MustCompile(`\bpid ` + strconv.FormatInt(pid, 10) + `\b`).FindStringIndex(out)
	if loc == nil {
		return -1
	}
	return loc[0]
}

func laneOf(t *testing.T, rep statusReport, scope, lane string) lease.LaneStatus {
	t.Helper()
	for _, l := range rep.Lanes {
		if l.Scope == scope && l.Lane == lane {
			return l
		}
	}
	t.Fatalf("no lane %s/%s in %+v", scope, lane, rep.Lanes)
	return lease.LaneStatus{}
}

// snapshot describes every file in path's directory (name, size, mode,
// modification time, content hash), to prove a command wrote nothing.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	dir := filepath.Dir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := ""
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:8])
		}
		lines = append(lines, fmt.Sprintf("%s %d %v %d %s", e.Name(), st.Size(), st.Mode(), st.ModTime().UnixNano(), sum))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// plainDB creates an SQLite database without lease tables.
func plainDB(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
}

// leasedDB creates a database that cleolease has used: lease tables, one
// released lane, a migration version; every handle closed.
func leasedDB(t *testing.T, path string) {
	t.Helper()
	dir := filepath.Join(testdir.New(t), "m")
	writeMigrations(t, dir)
	db, err := sql.Open("cleolease", "file:"+path+"?_migrations="+"file://"+filepath.ToSlash(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := cleolease.WithLane(context.Background(), "main", "jobs")
	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func writeMigrations(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"1_users.up.sql":   "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
		"1_users.down.sql": "DROP TABLE users;",
		"2_email.up.sql":   "ALTER TABLE users ADD COLUMN email TEXT;",
		"2_email.down.sql": "ALTER TABLE users DROP COLUMN email;",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func oneStderrLine(t *testing.T, r result) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if r.stderr == "" || len(lines) != 1 {
		t.Errorf("want exactly one line on stderr, got %d:\n%s", len(lines), r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("want nothing on stdout, got:\n%s", r.stdout)
	}
}

func TestErrors(t *testing.T) {
	dir := testdir.New(t)
	missing := filepath.Join(dir, "missing.db")
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("this is a text file, not an SQLite database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.db")
	plainDB(t, plain)
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, plain)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status", missing}, 1, "no such file"},
		{[]string{"status", dir}, 1, "is a directory"},
		{[]string{"status", junk}, 1, "not an SQLite database"},
		{[]string{"status", plain}, 1, "no cleolease lease tables"},
		{[]string{"status", empty}, 1, "no cleolease lease tables"},
		{[]string{"status", "file:" + plain}, 2, "DB is a file path, not a DSN (for example " + plain + ")"},
		{[]string{"status", "file:x.db?mode=ro", "--json"}, 2, "not a DSN (for example x.db)"},
		{[]string{"migrate", "file:" + plain, "version"}, 2, "not a DSN"},
		{[]string{"break", "file:" + plain, "--scope", "main", "--lane", "jobs"}, 2, "not a DSN"},
		{[]string{"break", missing, "--scope", "main", "--lane", "jobs"}, 1, "no such file"},
		{[]string{"break", junk, "--scope", "main", "--lane", "jobs"}, 1, "not an SQLite database"},
		{[]string{"break", plain, "--scope", "main", "--lane", "jobs"}, 1, "no cleolease lease tables"},
		{[]string{"migrate", missing, "version"}, 1, "no such file"},
		{[]string{"migrate", junk, "version"}, 1, "not an SQLite database"},
		{[]string{"migrate", plain, "--source", "file://" + filepath.ToSlash(filepath.Join(dir, "nope")), "up"}, 1, "no such file or directory"},

		{[]string{}, 0, ""},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"status"}, 2, "missing the database path"},
		{[]string{"status", plain, plain}, 2, "takes one database path"},
		{[]string{"status", "--bogus", plain}, 2, "unknown flag: --bogus"},
		{[]string{"status", "--watch=-1s", plain}, 2, "--watch must not be negative"},
		{[]string{"status", "--table", "x;y", plain}, 2, "not a plain SQL identifier"},
		{[]string{"break", plain}, 2, "--scope and --lane are required"},
		{[]string{"break", plain, "--lane", "jobs", "--scope"}, 2, "flag needs an argument"},
		{[]string{"migrate", plain}, 2, "missing the operation"},
		{[]string{"migrate", plain, "up"}, 2, "up needs --source"},
		{[]string{"migrate", plain, "down", "x"}, 2, "not a number"},
		{[]string{"migrate", plain, "sideways"}, 2, "unknown operation"},
		{[]string{"demo", "--workers", "0"}, 2, "--workers must be between 1 and 64"},
		{[]string{"demo", "--duration", "banana"}, 2, "invalid argument"},
		{[]string{"demo", "extra"}, 2, "takes no arguments"},
		{[]string{"bench", "--only", "9x9"}, 2, "--only"},
		{[]string{"bench", "--runs", "0"}, 2, "--runs"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			r := cli(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("want exit %d, got %s", tc.code, r)
			}
			if tc.code == 0 {
				if !strings.Contains(flat(r.stdout), "Usage:") {
					t.Errorf("no help:\n%s", r)
				}
				return
			}
			oneStderrLine(t, r)
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", r.stderr, tc.want)
			}
		})
	}
	t.Cleanup(func() {
		if after := snapshot(t, plain); after != before {
			t.Errorf("the commands wrote to the directory:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Errorf("a command created %s", missing)
		}
	})
}

// TestStatusWritesNothing runs status on a database cleolease has used,
// with every handle closed, and checks that no file in the directory
// changed or appeared.
func TestStatusWritesNothing(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	leasedDB(t, path)
	before := snapshot(t, path)
	r := cli(t, "status", path)
	if r.code != 0 {
		t.Fatal(r)
	}
	for _, want := range []string{"main/jobs", "(free)", "version 2, clean", "cleolease/migrate"} {
		if !strings.Contains(flat(r.stdout), want) {
			t.Errorf("status output lacks %q:\n%s", want, r.stdout)
		}
	}
	rep := statusJSON(t, path)
	if rep.Migrations.Version == nil || *rep.Migrations.Version != 2 || rep.Migrations.Dirty {
		t.Errorf("migrations = %+v, want version 2 clean", rep.Migrations)
	}
	if l := laneOf(t, rep, "main", "jobs"); l.Holder != nil || l.Epoch < 1 {
		t.Errorf("main/jobs = %+v, want free with an epoch", l)
	}
	if after := snapshot(t, path); after != before {
		t.Errorf("status wrote to the directory:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestStatusWaitingAgrees: on a database no process has open, --json and
// the text agree that nobody waits (issue 21, item 2: --json said -1, the
// text 0).
func TestStatusWaitingAgrees(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	leasedDB(t, path)
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Waiting != 0 || l.Unnamed != 0 {
		t.Errorf("--json: waiting %d, unnamed %d; want 0 and 0", l.Waiting, l.Unnamed)
	}
	r := cli(t, "status", path)
	if r.code != 0 || !strings.Contains(r.stdout, "  waiting  0 processes\n") {
		t.Errorf("status: want 0 processes waiting, got %s", r)
	}
}

// TestStatusHolderAndQueue: one process holds main/jobs, two wait; status
// shows the holder and the waiters in grant order (the later waiter has
// the better priority, so it is first), and --json parses.
func TestStatusHolderAndQueue(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	a := startHolder(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("HELD")
	b := startHolder(t, path, "jobs", 100)
	b.expect("OPEN")
	eventually(t, "the first waiter to queue", func() bool { return queued(t, path, "jobs") == 1 })
	c := startHolder(t, path, "jobs", 10)
	c.expect("OPEN")
	eventually(t, "the second waiter to queue", func() bool { return queued(t, path, "jobs") == 2 })

	l := laneOf(t, statusJSON(t, path), "main", "jobs")
	if l.Holder == nil || l.Holder.PID != a.pid() || !l.Holder.Alive || l.Holder.Depth != 1 {
		t.Fatalf("holder = %+v, want pid %d alive", l.Holder, a.pid())
	}
	if len(l.Waiters) != 2 || l.Waiters[0].PID != c.pid() || l.Waiters[1].PID != b.pid() {
		t.Fatalf("waiters = %+v, want pids %d (priority 10) then %d (priority 100)", l.Waiters, c.pid(), b.pid())
	}
	if l.Waiters[0].Priority != 10 || l.Waiters[1].Priority != 100 || !l.Waiters[0].Alive || !l.Waiters[1].Alive {
		t.Errorf("waiters = %+v", l.Waiters)
	}

	r := cli(t, "status", path)
	if r.code != 0 {
		t.Fatal(r)
	}
	out := r.stdout
	q := strings.Index(out, "queue    in grant order")
	ia, ib, ic := pidAt(out, a.pid()), pidAt(out, b.pid()), pidAt(out, c.pid())
	if q < 0 || ia < 0 || ia > q || ic < q || ib < ic || !strings.Contains(out, "alive (liveness lock held)") {
		t.Errorf("status does not show holder %d, then waiters %d and %d in grant order:\n%s", a.pid(), c.pid(), b.pid(), out)
	}
	// Issue 21, item 4: ids whole, every line within width columns, and
	// the count of waiting processes the one --json gives.
	for _, id := range []string{l.Holder.ID, l.Waiters[0].ID, l.Waiters[1].ID} {
		if !strings.Contains(out, id+" pid ") {
			t.Errorf("status does not show the whole id %s:\n%s", id, out)
		}
	}
	if l.Waiting != 2 || !strings.Contains(out, "  waiting  2 processes\n") {
		t.Errorf("--json says %d waiting; status says:\n%s", l.Waiting, out)
	}
	checkWidth(t, "status", out)

	// The grant follows the order shown.
	a.send("release")
	a.expect("RELEASED")
	c.expect("HELD")
	l = laneOf(t, statusJSON(t, path), "main", "jobs")
	if l.Holder == nil || l.Holder.PID != c.pid() || len(l.Waiters) != 1 || l.Waiters[0].PID != b.pid() {
		t.Errorf("after the release: holder %+v, waiters %+v; want %d holding, %d waiting", l.Holder, l.Waiters, c.pid(), b.pid())
	}
}

func TestBreakKilledHolder(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	a := startHolder(t, path, "jobs", 100)
	a.expect("OPEN")
	epoch, _ := strconv.ParseInt(a.expect("HELD"), 10, 64)
	a.Cmd.Process.Signal(syscall.SIGKILL)
	a.Cmd.Wait()

	l := laneOf(t, statusJSON(t, path), "main", "jobs")
	if l.Holder == nil || l.Holder.PID != a.pid() || l.Holder.Alive {
		t.Fatalf("holder = %+v, want pid %d dead", l.Holder, a.pid())
	}
	r := cli(t, "break", path, "--scope", "main", "--lane", "jobs")
	if r.code != 0 || !strings.Contains(flat(r.stdout), "broke main/jobs") || !strings.Contains(flat(r.stdout), "dead") {
		t.Fatalf("break: %s", r)
	}
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Holder != nil {
		t.Fatalf("after break, holder = %+v", l.Holder)
	}
	r = cli(t, "break", path, "--scope", "main", "--lane", "jobs")
	if r.code != 0 || !strings.Contains(flat(r.stdout), "nothing to break") {
		t.Errorf("second break: %s", r)
	}
	d := startHolder(t, path, "jobs", 100)
	d.expect("OPEN")
	if next, _ := strconv.ParseInt(d.expect("HELD"), 10, 64); next <= epoch {
		t.Errorf("next epoch %d, want > %d", next, epoch)
	}
}

func TestBreakLiveHolder(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	a := startHolder(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("HELD")
	r := cli(t, "break", path, "--scope", "main", "--lane", "jobs")
	if r.code != 1 {
		t.Fatalf("break of a live holder: want exit 1, got %s", r)
	}
	// stdout: the holder break saw (and would have broken); stderr: why not.
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "main/jobs: holder") ||
		!strings.Contains(lines[0], fmt.Sprintf("pid %d at epoch", a.pid())) || lines[1] != "  alive (liveness lock held)" {
		t.Errorf("stdout: want the holder seen, got %q", r.stdout)
	}
	oneStderrLine(t, result{stderr: r.stderr})
	if !strings.Contains(r.stderr, "refusing to break main/jobs") || !strings.Contains(r.stderr, "alive") || !strings.Contains(r.stderr, strconv.FormatInt(a.pid(), 10)) {
		t.Errorf("stderr: %s", r.stderr)
	}
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Holder == nil || l.Holder.PID != a.pid() {
		t.Fatalf("the refused break changed the holder: %+v", l.Holder)
	}
	r = cli(t, "break", path, "--scope", "main", "--lane", "jbos")
	if r.code != 1 || !strings.Contains(r.stderr, "no lane main/jbos (lanes: main/jobs)") {
		t.Errorf("break of an unknown lane: %s", r)
	}
	r = cli(t, "break", path, "--scope", "main", "--lane", "jobs", "--force")
	if r.code != 0 || !strings.Contains(flat(r.stdout), "alive, forced") {
		t.Fatalf("break --force: %s", r)
	}
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Holder != nil {
		t.Fatalf("after break --force, holder = %+v", l.Holder)
	}
}

func TestMigrate(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "app.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := "file://" + filepath.ToSlash(filepath.Join(dir, "migrations")) // golang-migrate's spelling: file://C:/dir on Windows
	writeMigrations(t, filepath.Join(dir, "migrations"))
	step := func(want string, args ...string) {
		t.Helper()
		r := cli(t, append([]string{"migrate", path, "--source", src}, args...)...)
		if r.code != 0 || !strings.Contains(flat(r.stdout), flat(want)) {
			t.Fatalf("migrate %v: want %q in the output, got %s", args, want, r)
		}
	}
	step("no version, clean; newest in the source 2, 2 pending", "version")
	step("  applied 1_users.up.sql (", "up") // each migration named by its file
	step("no change: version 2, clean", "up")
	step("  applied 2_email.down.sql (", "down", "1")
	step("version 2, clean; newest in the source 2, 0 pending (was version 1, clean;", "goto", "2")
	if r := cli(t, "migrate", path, "--source", src, "version"); !strings.Contains(flat(r.stdout), "version 2, clean") {
		t.Fatalf("after goto 2: %s", r)
	}
	// A failing migration: one line, exit 1, the previous version kept.
	if err := os.WriteFile(filepath.Join(dir, "migrations", "3_bad.up.sql"), []byte("CREATE TABLE users (x);"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "migrate", path, "--source", src, "up")
	// Issue 21, item 4: the file and the migration's file named, once each.
	if want := "cleolease migrate: " + path + ": migration 3 (3_bad.up.sql) failed: table users already exists; database left at version 2, clean\n"; r.code != 1 || r.stderr != want {
		t.Fatalf("failing migration: want exit 1 and\n%s\ngot %s", want, r)
	}
	oneStderrLine(t, r)
	if rep := statusJSON(t, path); rep.Migrations.Version == nil || *rep.Migrations.Version != 2 || rep.Migrations.Dirty {
		t.Errorf("after the failure: %+v", rep.Migrations)
	}
	step("version 1, clean", "force", "1")
	r = cli(t, "migrate", path, "version")
	if r.code != 0 || !strings.Contains(flat(r.stdout), "version 1, clean") {
		t.Fatal(r)
	}
	if l := laneOf(t, statusJSON(t, path), "cleolease", "migrate"); l.Holder != nil || l.Epoch < 1 {
		t.Errorf("the cold-open lane: %+v", l)
	}
}

// TestMigrateCreatesTheFile (issue 21, item 4): as golang-migrate's
// command does, an operation given --source creates a missing database
// (through SQLite); without --source, or when the source does not open,
// nothing is created.
func TestMigrateCreatesTheFile(t *testing.T) {
	dir := testdir.New(t)
	writeMigrations(t, filepath.Join(dir, "migrations"))
	src := "file://" + filepath.ToSlash(filepath.Join(dir, "migrations"))
	missing := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if r := cli(t, "migrate", p, "version"); r.code != 1 || !strings.Contains(r.stderr, p+": no such file") {
			t.Errorf("version without --source on a missing file: %s", r)
		}
		if r := cli(t, "migrate", p, "--source", "file://"+filepath.ToSlash(filepath.Join(dir, "nope")), "up"); r.code != 1 || !strings.Contains(r.stderr, "no such file or directory") {
			t.Errorf("up with a missing source: %s", r)
		}
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s was created without a source", p)
		}
		return p
	}
	up := missing("up.db")
	if r := cli(t, "migrate", up, "--source", src, "up"); r.code != 0 || !strings.Contains(flat(r.stdout), up+": created") || !strings.Contains(flat(r.stdout), "version 2, clean") {
		t.Fatalf("up on a missing file: %s", r)
	}
	if rep := statusJSON(t, up); rep.Migrations.Version == nil || *rep.Migrations.Version != 2 {
		t.Errorf("after up: %+v", rep.Migrations)
	}
	v := missing("version.db")
	if r := cli(t, "migrate", v, "--source", src, "version"); r.code != 0 || !strings.Contains(flat(r.stdout), "no version, clean; newest in the source 2, 2 pending") {
		t.Fatalf("version --source on a missing file: %s", r)
	}
	if st, err := os.Stat(v); err != nil || !st.Mode().IsRegular() {
		t.Errorf("version --source did not create %s: %v", v, err)
	}
	nodir := filepath.Join(dir, "nodir", "x.db")
	if r := cli(t, "migrate", nodir, "--source", src, "up"); r.code != 1 || !strings.Contains(r.stderr, "no such directory") {
		t.Errorf("up in a missing directory: %s", r)
	}
}

// TestDemo runs the demo small and checks what its report claims: raw
// go-sqlite3 shows lock errors or unfairness, cleolease no lock errors, no
// lost updates, every migration applied exactly once.
func TestDemo(t *testing.T) {
	r := cli(t, "demo", "--workers", "3", "--duration", "1s", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var rep demoReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("demo --json does not parse: %v\n%s", err, r.stdout)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Driver != "raw" || rep.Runs[1].Driver != "cleolease" {
		t.Fatalf("runs: %+v", rep.Runs)
	}
	raw, cl := rep.Runs[0], rep.Runs[1]
	t.Logf("raw: %d commits, %d lock errors, fairness %.2f, max applications %d, final %s",
		raw.Load.Commits, raw.Load.LockErrors, raw.Load.Fairness, raw.Migrations.MaxApplications, raw.Migrations.Final)
	t.Logf("cleolease: %d commits, %d lock errors, fairness %.2f, max applications %d, final %s",
		cl.Load.Commits, cl.Load.LockErrors, cl.Load.Fairness, cl.Migrations.MaxApplications, cl.Migrations.Final)
	if raw.Load.LockErrors == 0 && raw.Load.Fairness >= 0.9 {
		t.Errorf("raw go-sqlite3 showed neither lock errors nor unfairness: %+v", raw.Load)
	}
	if cl.Load.Commits == 0 || cl.Load.LockErrors != 0 || cl.Load.OtherErrors != 0 {
		t.Errorf("cleolease: %d commits, errors %v %v", cl.Load.Commits, cl.Load.Errors, cl.Load.Samples)
	}
	if c := cl.Load.Lease; c == nil || c.Degraded != 0 || c.Fenced != 0 || c.Lost != 0 || c.Grants == 0 {
		t.Errorf("cleolease lease counters: %+v", c)
	}
	if cl.Check.LostUpdates != 0 || cl.Check.AuditRows != cl.Load.Commits || cl.Check.Integrity != "ok" {
		t.Errorf("cleolease data check: %+v", cl.Check)
	}
	if raw.Check.AuditRows != raw.Load.Commits {
		t.Errorf("raw data check: %+v", raw.Check)
	}
	m := cl.Migrations
	if m.MaxApplications != 1 || m.Missing != 0 || m.Failed != 0 || len(m.Versions) != 12 ||
		m.Final.Version == nil || *m.Final.Version != 12 || m.Final.Dirty {
		t.Errorf("cleolease migrations: %+v", m)
	}
	for _, v := range m.Versions {
		if v.Applications != 1 {
			t.Errorf("cleolease applied %s %d times", v.Name, v.Applications)
		}
	}
	// Issue 16, item 9: the raw side shows the race, or says it missed it.
	rm := raw.Migrations
	if rm.Tries < 1 || rm.Tries > demoRaceTries || (!rm.Collided && rm.Tries != demoRaceTries) || (rm.Collided != rm.collided()) {
		t.Errorf("raw migrations: collided %t after %d tries (bound %d)", rm.Collided, rm.Tries, demoRaceTries)
	}
	if m.Tries != 1 {
		t.Errorf("cleolease migrations ran %d times, want once", m.Tries)
	}
	// Issue 16, item 10: the time until a write lands counts failed
	// attempts, so it is never below the committed attempt's.
	for _, r := range rep.Runs {
		if l := r.Load; l.LandP50 < l.P50 || l.LandP99 < l.P99 || l.LandMax < l.Max || l.LandMax == 0 {
			t.Errorf("%s: landed %v/%v/%v below committed-try %v/%v/%v", r.Label, l.LandP50, l.LandP99, l.LandMax, l.P50, l.P99, l.Max)
		}
	}
	// The table the demo prints without --json.
	var b bytes.Buffer
	printDemo(&b, rep)
	out := b.String()
	for _, want := range []string{"raw go-sqlite3", "cleolease", "lock errors", "lost updates", "fairness",
		"latency, committed try", "latency, until it lands", "failed attempts retried",
		"max applications/migration", "009_rebuild_tasks", "schema version afterwards",
		"\ngrants: ", "\nhand-offs: ", "\ndegraded: ", "\nfenced: "} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo output lacks %q:\n%s", want, out)
		}
	}
	if rm.Collided && !strings.Contains(out, "the race showed on") || !rm.Collided && !strings.Contains(out, "this run missed the race") {
		t.Errorf("the demo output does not say how the raw race went:\n%s", out)
	}
	// Issue 21, item 4: every line of the report and of the progress
	// lines within width columns, also with the longest values a run can
	// give (kept databases in a deep directory, long error samples), paths
	// whole.
	checkWidth(t, "demo", out)
	checkWidth(t, "demo's progress", r.stderr)
	deep := filepath.Join(testdir.New(t), strings.Repeat("a-long-directory-name/", 3))
	for i := range rep.Runs {
		run := &rep.Runs[i]
		run.DB = filepath.Join(deep, run.Label+".db")
		run.WorkloadDB = filepath.Join(deep, run.Label+".workload.db")
		run.Load.Samples = map[string]string{"locked": strings.Repeat("database is locked (5) (SQLITE_BUSY) ", 5)}
		run.Migrations.Samples = []string{strings.Repeat("Dirty database version 2. Fix and force version. ", 4)}
		run.Migrations.Outcomes["failed: "+strings.Repeat("x", 80)] = 1
		run.Migrations.Versions = slices.Clone(run.Migrations.Versions)
		run.Migrations.Versions[0].Name = "001_" + strings.Repeat("a_long_migration_name_", 4)
	}
	rep.Kept = true
	b.Reset()
	printDemo(&b, rep)
	checkWidth(t, "demo with long values", b.String())
	if !strings.Contains(b.String(), rep.Runs[1].DB) || !strings.Contains(flat(b.String()), rep.Runs[1].Migrations.Versions[0].Name+": raw go-sqlite3 ") {
		t.Errorf("the demo output cuts the path %s:\n%s", rep.Runs[1].DB, b.String())
	}
}

// TestDemoOwnMigrationsAndDB: --migrations races the user's migration set
// (the workload then runs on a second file), --db keeps the databases and
// refuses to overwrite them.
func TestDemoOwnMigrationsAndDB(t *testing.T) {
	dir := testdir.New(t)
	writeMigrations(t, filepath.Join(dir, "mig"))
	db := filepath.Join(dir, "demo.db")
	r := cli(t, "demo", "-w", "2", "-d", "300ms", "--db", db, "--migrations", "file://"+filepath.ToSlash(filepath.Join(dir, "mig")), "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var rep demoReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	cl := rep.Runs[1]
	if cl.DB != db || cl.WorkloadDB == db || len(cl.Migrations.Versions) != 2 || cl.Migrations.MaxApplications != 1 || cl.Load.LockErrors != 0 {
		t.Errorf("cleolease run: db %s workload %s migrations %+v", cl.DB, cl.WorkloadDB, cl.Migrations)
	}
	for _, p := range []string{db, filepath.Join(dir, "demo.raw.db")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("--db did not keep %s", p)
		}
	}
	if st := statusJSON(t, db); st.Migrations.Version == nil || *st.Migrations.Version != 2 {
		t.Errorf("status of the kept database: %+v", st.Migrations)
	}
	r = cli(t, "demo", "-w", "1", "-d", "100ms", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("demo over an existing --db: %s", r)
	}
}

// TestBenchSmoke runs the bench's uncontended load briefly: every peer
// commits, with no error and no lost update, and the ratios are there.
func TestBenchSmoke(t *testing.T) {
	r := cli(t, "bench", "--only", "1x1", "--duration", "300ms", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var out []benchResult
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, r.stdout)
	}
	if len(out) != 1 || out[0].Workload.ID != "1x1" || len(out[0].Lines) != len(workload.BenchPeers)+1 {
		t.Fatalf("bench: %+v", out)
	}
	for _, l := range out[0].Lines {
		if l.CommitsPerSec <= 0 || l.Errors != 0 || l.LostUpdates != 0 {
			t.Errorf("%s: %+v", l.Driver, l)
		}
	}
	for _, p := range []workload.Peer{workload.TxLock, workload.Flock} {
		if !p.Supported() {
			continue // Flock: no flock(2) on Windows
		}
		if out[0].Ratios[p] <= 0 {
			t.Errorf("cleolease over %s: %v", p, out[0].Ratios[p])
		}
	}
	// Issue 21, item 4: the table and its notes within width columns, also
	// with the widest load name and figures a run gives, and the progress
	// lines.
	checkWidth(t, "bench's progress", r.stderr)
	var b bytes.Buffer
	printBench(&b, out, 300*time.Millisecond, "NORMAL", 1)
	wide := out[0]
	wide.Workload.ID = "32x1-1ms"
	wide.Lines = slices.Clone(wide.Lines)
	for i := range wide.Lines {
		l := &wide.Lines[i]
		l.CommitsPerSec, l.P50, l.P99, l.Max, l.Errors = 999_999, 9*time.Millisecond, 999*time.Millisecond, 9999*time.Millisecond, 99_999
		l.ErrorSample = strings.Repeat("database is locked (5) (SQLITE_BUSY) ", 4)
	}
	printBench(&b, []benchResult{out[0], wide}, 3*time.Second, "NORMAL", 100)
	if !strings.Contains(b.String(), "│ 32x1-1ms │ cleolease │ 999,999") {
		t.Errorf("the widest realistic figures are no longer a table:\n%s", b.String())
	}
	// Figures no run gives: the table would not fit, so a block per line.
	huge := wide
	huge.Lines = slices.Clone(wide.Lines)
	for i := range huge.Lines {
		huge.Lines[i].Errors, huge.Lines[i].LostUpdates, huge.Lines[i].Max = 1_234_567_890, 1_234_567_890, 123*time.Hour
	}
	printBench(&b, []benchResult{huge}, 3*time.Second, "NORMAL", 1)
	if !strings.Contains(flat(b.String()), "32x1-1ms txlock: commits/s 999,999, p50 / p99 / max ms 9.00 / 999 / 442800000, errors 1,234,567,890") {
		t.Errorf("figures too wide for the table are not listed per line:\n%s", b.String())
	}
	t.Logf("\n%s", b.String())
	checkWidth(t, "bench", b.String())
}

// TestBenchShortLoads runs the short-lived-process loads briefly (issue
// 29): each invocation is a worker process of its own that opens the file,
// commits once and exits; every peer's invocations commit, with no error
// and no lost update (the log's rows match the processes that exited 0),
// and each line says what an invocation costs in CPU.
func TestBenchShortLoads(t *testing.T) {
	r := cli(t, "bench", "--only", "cli1,cli8", "--duration", "300ms", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var out []benchResult
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, r.stdout)
	}
	if len(out) != 2 || out[0].Workload.ID != "cli1" || out[1].Workload.ID != "cli8" {
		t.Fatalf("bench: %+v", out)
	}
	for _, res := range out {
		if !res.Workload.Short || len(res.Lines) != len(workload.BenchPeers) {
			t.Errorf("%s: short %v, %d lines; want a short load on %d peers", res.Workload.ID, res.Workload.Short, len(res.Lines), len(workload.BenchPeers))
		}
		for _, l := range res.Lines {
			if l.CommitsPerSec <= 0 || l.Errors != 0 || l.LostUpdates != 0 || l.CPUPerOp <= 0 {
				t.Errorf("%s %s: %+v", res.Workload.ID, l.Driver, l)
			}
		}
	}
	var b bytes.Buffer
	printBench(&b, out, 300*time.Millisecond, "NORMAL", 1)
	if !strings.Contains(flat(b.String()), "cli8: a commit is a process") {
		t.Errorf("the table does not say what a short load's commit is:\n%s", b.String())
	}
	checkWidth(t, "bench", b.String())
}

func TestFileURI(t *testing.T) {
	// An absolute path of this OS (on Windows SQLite reads
	// "file:C:%5Cdir%5Cx.db" as C:\dir\x.db, https://www.sqlite.org/uri.html).
	path, want := "/tmp/a b?c#d%e.db", "file:/tmp/a%20b%3Fc%23d%25e.db?mode=ro"
	if runtime.GOOS == "windows" {
		path, want = `C:\tmp\a b?c#d%e.db`, "file:C:%5Ctmp%5Ca%20b%3Fc%23d%25e.db?mode=ro"
	}
	u, err := fileURI(path, "mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	if u != want {
		t.Errorf("fileURI = %q, want %q", u, want)
	}
}

func TestCountingFS(t *testing.T) {
	fsys, err := countingFS(demoMigrations(), 42)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := migrationVersions(fsys)
	if err != nil || len(vs) < 10 {
		t.Fatalf("versions %v, %v: want at least 10", vs, err)
	}
	up, _ := fs.ReadFile(fsys, "009_rebuild_tasks.up.sql")
	down, _ := fs.ReadFile(fsys, "009_rebuild_tasks.down.sql")
	if !strings.HasSuffix(string(up), "INSERT INTO migration_runs (version, pid) VALUES (9, 42);\n") || strings.Contains(string(down), "migration_runs") {
		t.Errorf("counting instrumentation:\nup: %s\ndown: %s", up, down)
	}
}

// TestBreakWhileTheWriteLockIsTaken: a process that keeps a write
// transaction open (a holder stopped inside one) keeps SQLite's write lock;
// break gives up after --timeout with an error that says so, instead of
// hanging.
func TestBreakWhileTheWriteLockIsTaken(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	a := startHolder(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("HELD")
	defer takeWriteLock(t, path)()
	r := cli(t, "break", path, "--scope", "main", "--lane", "jobs", "--force", "--timeout", "300ms")
	if r.code != 1 || !strings.Contains(r.stderr, "write lock") || !strings.Contains(r.stderr, strconv.FormatInt(a.pid(), 10)) {
		t.Fatalf("break with the write lock taken: want exit 1 naming the lock and holder pid %d, got %s", a.pid(), r)
	}
	if r = cli(t, "break", path, "--scope", "main", "--lane", "jobs", "--timeout", "0s"); r.code != 2 {
		t.Errorf("--timeout 0s: want a usage error, got %s", r)
	}
}

// TestStatusNamesRegisteredWaiters: a waiter that has only registered with
// the holder (here it cannot write its queue row: another connection keeps
// SQLite's write lock) has no queue row, but status names it: the holder
// reports its registration.
func TestStatusNamesRegisteredWaiters(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	a := startHolder(t, path, "jobs", 100)
	a.expect("OPEN")
	a.expect("HELD")
	unlock := takeWriteLock(t, path)
	b := startHolder(t, path, "jobs", 100)
	b.expect("OPEN")
	if platform.PollWake {
		// Without a doorbell nobody registers: the waiter is counted,
		// unnamed, and the note says why.
		var l lease.LaneStatus
		eventually(t, "status to count the waiter", func() bool {
			l = laneOf(t, statusJSON(t, path), "main", "jobs")
			return l.Waiting == 1
		})
		if len(l.Waiters) != 0 || l.Unnamed != 1 || !strings.Contains(l.Note, "doorbell") {
			t.Fatalf("lane %+v: want one unnamed waiter and a note about the doorbell", l)
		}
		unlock()
		a.send("release")
		b.expect("HELD")
		return
	}
	var l lease.LaneStatus
	eventually(t, "status to name the registered waiter", func() bool {
		l = laneOf(t, statusJSON(t, path), "main", "jobs")
		return len(l.Waiters) == 1 && l.Waiters[0].PID == b.pid()
	})
	if w := l.Waiters[0]; w.Source != "holder" || w.Ticket != 0 || w.Place != 1 || !w.Alive || l.Waiting != 1 || l.Unnamed != 0 {
		t.Fatalf("lane %+v: want one waiter named by the holder, first in line, and nobody unnamed", l)
	}
	r := cli(t, "status", path)
	if r.code != 0 || pidAt(r.stdout, b.pid()) < 0 || !strings.Contains(flat(r.stdout), "no queue row yet (registered with the holder)") {
		t.Errorf("status does not show the registered waiter %d:\n%s", b.pid(), r.stdout)
	}
	unlock()
	a.send("release")
	a.expect("RELEASED")
	b.expect("HELD")
}

// takeWriteLock keeps SQLite's write lock on path (an open BEGIN IMMEDIATE
// on a raw connection), as a holder stopped inside a transaction would;
// the returned function rolls back and releases it.
func takeWriteLock(t *testing.T, path string) func() {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock := func() {
		once.Do(func() {
			conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// TestMigrateSourceForms: --source takes a directory path by the driver's
// rule for _migrations (a path separator or a leading '.'), so the same
// value works in both places, and a plain name — a source registered from
// Go, in a DSN — is refused with the spelling that means the directory
// (issue 16, item 3).
func TestMigrateSourceForms(t *testing.T) {
	dir := testdir.New(t)
	writeMigrations(t, filepath.Join(dir, "migrations"))
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cwd, filepath.Join(dir, "migrations"))
	if err != nil && runtime.GOOS == "windows" {
		// The temporary directory is on another drive than the package
		// (Wine: C: and Z:): no relative path leads there.
		t.Skipf("Windows: no relative path to the temporary directory on another drive: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{rel, "./" + rel, filepath.Join(dir, "migrations"), "file://" + filepath.ToSlash(filepath.Join(dir, "migrations"))} {
		path := filepath.Join(dir, fmt.Sprintf("app%d.db", i))
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := cli(t, "migrate", path, "--source", src, "up"); r.code != 0 || !strings.Contains(flat(r.stdout), "version 2, clean") {
			t.Errorf("--source %s: %s", src, r)
		}
		// The driver takes the same value as _migrations (a file: URI
		// value is percent-decoded by ParseDSN).
		db, err := sql.Open("cleolease", "file:"+path+"x?_migrations="+url.QueryEscape(src))
		if err != nil {
			t.Fatal(err)
		}
		var v int
		if err := db.QueryRow(`SELECT version FROM schema_migrations`).Scan(&v); err != nil || v != 2 {
			t.Errorf("_migrations=%s: version %d, %v; want 2", src, v, err)
		}
		db.Close()
	}
	path := filepath.Join(dir, "named.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "migrate", path, "--source", "migrations", "up")
	if r.code != 1 || !strings.Contains(r.stderr, "./migrations") || !strings.Contains(r.stderr, "RegisterMigrations") {
		t.Errorf("--source migrations (a plain name): %s", r)
	}
}
