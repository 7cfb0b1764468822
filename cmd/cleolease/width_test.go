package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
)

// checkWidth fails for every line of out wider than width columns, except
// a line that is one word (a long path) alone.
func checkWidth(t *testing.T, what, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width && len(strings.Fields(line)) > 1 {
			t.Errorf("%s, line %d: %d columns, want at most %d:\n%s", what, i+1, n, width, line)
		}
	}
}

func TestWrap(t *testing.T) {
	long := strings.Repeat("x", width+5)
	for _, tc := range []struct{ first, rest, text, want string }{
		{"", "", "a b c", "a b c"},
		{"note: ", "  ", "a\n b\t c ", "note: a b c"},
		{"", "", "a " + long + " b", "a\n" + long + "\nb"},
		{"  ", "  ", long, "  " + long},
		{"", "    ", strings.Repeat("word ", 30), strings.TrimSpace(strings.Repeat("word ", 20)) + "\n    " + strings.TrimSpace(strings.Repeat("word ", 10))},
	} {
		if got := wrap(tc.first, tc.rest, tc.text); got != tc.want {
			t.Errorf("wrap(%q, %q, %q) =\n%s\nwant\n%s", tc.first, tc.rest, tc.text, got, tc.want)
		}
		checkWidth(t, "wrap", wrap(tc.first, tc.rest, tc.text))
	}
}

func TestWrapLines(t *testing.T) {
	in := "first: " + strings.Repeat("word ", 25) + "\n  second " + strings.Repeat("x", width)
	want := "first: " + strings.TrimSpace(strings.Repeat("word ", 18)) + "\n  " + strings.TrimSpace(strings.Repeat("word ", 7)) +
		"\n  second\n    " + strings.Repeat("x", width)
	if got := wrapLines(in); got != want {
		t.Errorf("wrapLines =\n%s\nwant\n%s", got, want)
	}
}

// TestHelpWidth: the help of every command, the hidden worker included,
// fits in width columns (issue 21, item 4).
func TestHelpWidth(t *testing.T) {
	helps := [][]string{{"--help"}, {"help"}}
	for _, c := range newRoot(nil, nil).Commands() {
		helps = append(helps, []string{c.Name(), "--help"}, []string{"help", c.Name()})
	}
	for _, args := range helps {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("cleolease %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		checkWidth(t, "cleolease "+strings.Join(args, " "), out.String())
	}
}

// TestStatusPrintWidth: status lays out the longest values it can meet —
// long scope and lane names, evidence, notes, dead and unnamed waiters, a
// long path — within width columns, ids whole.
func TestStatusPrintWidth(t *testing.T) {
	id := "cl-53546b78-0e1f-4a2b-9c3d-1234567890ab"
	long := strings.Repeat("a-very-long-lane-name-", 6)
	v := int64(12)
	rep := statusReport{
		Path:       "/" + strings.Repeat("deep/", 30) + "app.db",
		Migrations: migrationState{Table: "schema_migrations", Present: true, Version: &v, Dirty: true},
		Lanes: []lease.LaneStatus{{
			Scope: "tenant-" + long, Lane: long, Epoch: 123456789,
			Holder: &lease.HolderStatus{ID: id, PID: 4194304, Alive: true, Epoch: 123456789,
				Why:     "holder from another boot or host: never judged dead on local evidence (network filesystem)",
				HeldFor: 90 * time.Minute, Heartbeat: 42 * time.Second, TTL: 10 * time.Second, Depth: 3},
			Waiters: []lease.WaiterStatus{
				{Ticket: 1 << 40, ID: id + "x", PID: 4194303, Priority: -1 << 40, Waited: time.Hour, Source: "queue", Why: "liveness lock released (other pid namespace)"},
				{ID: id + "y", PID: 17, Priority: 100, Waited: time.Millisecond, Source: "holder", Alive: true, Why: "liveness lock held"},
			},
			Waiting: 3, Unnamed: 2,
			Note: "2 waiting process(es) not named: the holder did not answer within 500ms (stopped, or too busy); its waiters are counted from their want locks on the sidecar",
		}, {Scope: "main", Lane: "jobs", Epoch: 1, Waiters: []lease.WaiterStatus{}}},
	}
	var b bytes.Buffer
	printStatus(&b, rep)
	out := b.String()
	t.Logf("\n%s", out)
	checkWidth(t, "status", out)
	for _, want := range []string{id + " pid 4194304", id + "x pid 4194303", id + "y pid 17", "waiting  3 processes, 2 of them not named",
		"holder   none (free)", "hung?", "DEAD (liveness lock released", "ticket 1099511627776 (queue row)",
		"no queue row yet (registered with the holder)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q", want)
		}
	}
}

// TestLeaseFailureOneLine: a failure of the lease engine is reported as
// "cleolease migrate: DB: OP: cause", without the engine's own
// "cleolease: OP on PATH" preamble (here the sidecar's path is taken by a
// directory).
func TestLeaseFailureOneLine(t *testing.T) {
	dir := testdir.New(t)
	writeMigrations(t, filepath.Join(dir, "migrations"))
	path := filepath.Join(dir, "app.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(platform.SidecarPath(path), 0o755); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "migrate", path, "--source", "file://"+filepath.ToSlash(filepath.Join(dir, "migrations")), "up")
	oneStderrLine(t, result{stderr: r.stderr})
	if r.code != 1 || !strings.HasPrefix(r.stderr, "cleolease migrate: "+path+": open: ") || strings.Count(r.stderr, "cleolease") != 2 {
		t.Errorf("want one line naming the command, DB and the failed open once each; got %s", r)
	}
}
