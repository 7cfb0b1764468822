package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// TestStatusPlainFileJSON: on a plain SQLite file (no lease tables),
// `status --json` prints JSON — an empty lane list and the reason — and
// exits 0; without --json it still fails with one line (issue 16, item 6).
func TestStatusPlainFileJSON(t *testing.T) {
	plain := filepath.Join(testdir.New(t), "plain.db")
	plainDB(t, plain)
	r := cli(t, "status", plain, "--json")
	if r.code != 0 {
		t.Fatalf("status --json on a plain file: %s", r)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json printed no JSON: %v\n%s", err, r)
	}
	lanes, ok := rep["lanes"].([]any)
	if !ok || len(lanes) != 0 {
		t.Errorf("lanes = %#v, want an empty list", rep["lanes"])
	}
	if reason, _ := rep["reason"].(string); !strings.Contains(reason, "no cleolease lease tables") {
		t.Errorf("reason = %q, want the missing lease tables named", reason)
	}
	if r := cli(t, "status", plain); r.code != 1 || !strings.Contains(r.stderr, "no cleolease lease tables") {
		t.Errorf("status (text) on a plain file: %s", r)
	}
	// A leased file with no lane yet lists [] too, never null.
	leased := filepath.Join(testdir.New(t), "leased.db")
	leasedDB(t, leased)
	if rep := statusJSON(t, leased); rep.Lanes == nil || rep.Reason != "" {
		t.Errorf("leased file: lanes %#v, reason %q", rep.Lanes, rep.Reason)
	}
}

// TestStatusWatchSpaceSeparated: `status DB --watch 2s` (the value as a
// separate word) watches, like --watch=2s, instead of failing with "takes
// one database path" (issue 16, item 6). The command prints its first
// report and keeps running until interrupted.
func TestStatusWatchSpaceSeparated(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	leasedDB(t, path)
	cmd, sc, errb := startCLI(t, "status", path, "--watch", "2s", "--json")
	if !sc.Scan() {
		cmd.Wait()
		t.Fatalf("no report from status --watch 2s; stderr: %s", errb.String())
	}
	var rep statusReport
	if err := json.Unmarshal(sc.Bytes(), &rep); err != nil || rep.Path != path {
		t.Fatalf("first report %q: %v", sc.Text(), err)
	}
	if runtime.GOOS == "windows" {
		// Windows has no SIGINT to send to another process (os.Process.
		// Signal can only kill there): the report above showed the form
		// was read; the interrupt is a Unix test.
		cmd.Process.Kill()
		cmd.Wait()
		return
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("status --watch 2s after SIGINT: %v; stderr: %s", err, errb.String())
	}
}

// TestFixArgs: the forms pflag would misread are rewritten, and nothing
// else is touched.
func TestFixArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"migrate", "a.db", "force", "-1"}, []string{"migrate", "a.db", "force", "--", "-1"}},
		{[]string{"migrate", "a.db", "force", "-1", "--table", "v"}, []string{"migrate", "a.db", "force", "--table", "v", "--", "-1"}},
		{[]string{"migrate", "--source", "file://m", "a.db", "goto", "-3"}, []string{"migrate", "--source", "file://m", "a.db", "goto", "--", "-3"}},
		{[]string{"migrate", "a.db", "force", "1"}, []string{"migrate", "a.db", "force", "1"}},
		{[]string{"status", "a.db", "--watch", "2s"}, []string{"status", "a.db", "--watch=2s"}},
		{[]string{"status", "--watch", "a.db"}, []string{"status", "--watch", "a.db"}},
		{[]string{"status", "a.db", "--watch"}, []string{"status", "a.db", "--watch"}},
		{[]string{"break", "a.db", "--watch", "2s"}, []string{"break", "a.db", "--watch", "2s"}},
	} {
		if got := fixArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("fixArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMigrateForceMinusOne: `migrate DB force -1`, the form --help
// documents, records "no version" instead of failing with "unknown
// shorthand flag: '1'" (issue 16, item 8).
func TestMigrateForceMinusOne(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "app.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	writeMigrations(t, filepath.Join(dir, "migrations"))
	if r := cli(t, "migrate", path, "--source", "file://"+filepath.ToSlash(filepath.Join(dir, "migrations")), "up"); r.code != 0 {
		t.Fatal(r)
	}
	if r := cli(t, "migrate", "--help"); !strings.Contains(flat(r.stdout), "-1 records no version") {
		t.Fatalf("--help no longer documents force -1: %s", r)
	}
	r := cli(t, "migrate", path, "force", "-1")
	if r.code != 0 {
		t.Fatalf("migrate DB force -1: %s", r)
	}
	r = cli(t, "migrate", path, "version")
	if r.code != 0 || !strings.Contains(flat(r.stdout), "no version") {
		t.Fatalf("after force -1: %s", r)
	}
	if r := cli(t, "migrate", path, "force", "-2"); r.code != 2 || !strings.Contains(r.stderr, "V must be -1 or more") {
		t.Errorf("force -2: %s", r)
	}
}

// TestDemoMissedRace: when the raw side's migrations do not collide (one
// worker never races itself) the demo tries again on a fresh file, up to
// demoRaceTries times, and then says plainly that this run missed the race
// instead of showing "once" everywhere without a note (issue 16, item 9).
func TestDemoMissedRace(t *testing.T) {
	r := cli(t, "demo", "--workers", "1", "--duration", "200ms", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var rep demoReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("demo --json does not parse: %v\n%s", err, r.stdout)
	}
	raw := rep.Runs[0]
	if raw.Migrations.Collided || raw.Migrations.Tries != demoRaceTries {
		t.Fatalf("raw migrations: collided %t after %d tries, want no collision after %d", raw.Migrations.Collided, raw.Migrations.Tries, demoRaceTries)
	}
	if raw.Load.Commits == 0 {
		t.Errorf("the last try did not run the workload: %+v", raw.Load)
	}
	var b strings.Builder
	printDemo(&b, rep)
	if !strings.Contains(b.String(), "this run missed the race: no migration collided in 5 tries") {
		t.Errorf("the demo output does not say it missed the race:\n%s", b.String())
	}
	r = cli(t, "demo", "--workers", "1", "--duration", "200ms")
	if n := strings.Count(r.stderr, "no collision this time"); r.code != 0 || n != demoRaceTries-1 {
		t.Errorf("progress lines: %d 'no collision this time', want %d:\n%s", n, demoRaceTries-1, r)
	}
}

// TestBreakEpochFlag: --epoch N breaks only if N is still the active
// epoch; otherwise it fails naming the holder and epoch that are active,
// which stay untouched (issue 16, item 7).
func TestBreakEpochFlag(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	a := startHolder(t, path, "jobs", 100)
	a.expect("OPEN")
	epoch, _ := strconv.ParseInt(a.expect("HELD"), 10, 64)
	stale := strconv.FormatInt(epoch+5, 10)
	r := cli(t, "break", path, "--scope", "main", "--lane", "jobs", "--force", "--epoch", stale)
	if r.code != 1 || !strings.Contains(r.stderr, "epoch "+stale+" is no longer active") ||
		!strings.Contains(r.stderr, fmt.Sprintf("(pid %d) holds it at epoch %d", a.pid(), epoch)) {
		t.Fatalf("break --epoch %s (not active): %s", stale, r)
	}
	if l := laneOf(t, statusJSON(t, path), "main", "jobs"); l.Holder == nil || l.Holder.PID != a.pid() || l.Holder.Epoch != epoch {
		t.Fatalf("the refused break changed the holder: %+v", l.Holder)
	}
	r = cli(t, "break", path, "--scope", "main", "--lane", "jobs", "--force", "--epoch", strconv.FormatInt(epoch, 10))
	if r.code != 0 || !strings.Contains(flat(r.stdout), "broke main/jobs: holder") || !strings.Contains(flat(r.stdout), fmt.Sprintf("at epoch %d;", epoch)) {
		t.Fatalf("break --epoch %d: %s", epoch, r)
	}
	if r := cli(t, "break", path, "--scope", "main", "--lane", "jobs", "--epoch", "0"); r.code != 2 || !strings.Contains(r.stderr, "--epoch must be positive") {
		t.Errorf("--epoch 0: %s", r)
	}
}

// startCLI starts the CLI with args in a child process, killed when the
// test ends, and returns it with a scanner of its stdout and its stderr.
func startCLI(t *testing.T, args ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(childEnv(), "CLEOLEASE_CMD_TEST=cli")
	errb := &strings.Builder{}
	cmd.Stderr = errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out), errb
}
