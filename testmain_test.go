package cleolease_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Multi-process tests re-execute the test binary with CLEOLEASE_ROLE set;
// TestMain then runs that role (registered in roles by the test files'
// init functions) instead of the tests. Children report on stdout lines and
// take orders from stdin lines; CLEOLEASE_DSN carries the DSN.
var roles = map[string]func() int{}

func TestMain(m *testing.M) {
	if role := os.Getenv("CLEOLEASE_ROLE"); role != "" {
		f, ok := roles[role]
		if !ok {
			fmt.Println("ERR unknown role", role)
			os.Exit(2)
		}
		os.Exit(f())
	}
	os.Exit(m.Run())
}

// child is a re-executed test binary playing a role.
type child struct {
	t   testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startChild runs role in a new process with CLEOLEASE_DSN=dsn and the
// extra environment; the child is killed at the end of the test.
func startChild(t testing.TB, role, dsn string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"CLEOLEASE_ROLE=" + role, "CLEOLEASE_DSN=" + dsn}, env...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	return c
}

// expect reads the child's next line, checks its prefix and returns the rest.
func (c *child) expect(prefix string) string {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("child %d ended before %q: %v", c.cmd.Process.Pid, prefix, c.out.Err())
	}
	line := c.out.Text()
	if !strings.HasPrefix(line, prefix) {
		c.t.Fatalf("child said %q, want prefix %q", line, prefix)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, prefix))
}

// send writes one line to the child's stdin.
func (c *child) send(line string) {
	c.t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		c.t.Fatal(err)
	}
}

// eventually polls cond every 2ms until it holds, failing after 20s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
