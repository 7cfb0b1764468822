// Package proctest is the harness of the multi-process tests and
// benchmarks: a parent re-executes its own binary as a child process
// playing a role, reads the child's reports as stdout lines and gives it
// orders as stdin lines.
//
// Which role a child plays, and how it learns its database, is each user's
// own convention (environment variables read by a test package's TestMain,
// or a hidden subcommand of a program); this package only starts, talks to
// and reaps the processes. Child is the form for tests (a failure fails
// the test); Proc and Group are the same protocol with errors and time
// limits, for a program's own child processes (cmd/cleolease's demo and
// bench workers, through internal/workload). The package does not import
// testing, so a program may link it.
package proctest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// TB is the part of testing.TB the test helpers use; a *testing.T or
// *testing.B is one.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Child is a re-executed test binary playing a role, started by Start or
// StartCmd. It is killed (SIGKILL) and reaped when its test ends.
type Child struct {
	// T is the test that started the child; Expect and Send fail it.
	T TB
	// Cmd is the child process. Tests may signal or wait for it; a Wait
	// after the child was already reaped just returns an error.
	Cmd *exec.Cmd
	// In is the write end of the child's stdin.
	In io.WriteCloser
	// Out reads the child's stdout line by line. A caller that expects
	// lines longer than bufio.MaxScanTokenSize (64 KiB) sets Out.Buffer
	// before the first Expect.
	Out *bufio.Scanner
}

// Command returns the command that re-executes the test binary
// (os.Args[0]) with no tests to run (-test.run=^$), so that the package's
// TestMain plays the role that env selects instead. Its environment is the
// parent's with env appended (later entries win), and its stderr is the
// parent's. It is not started: change it, then pass it to StartCmd.
func Command(env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// Start starts Command(env...) with StartCmd.
func Start(t TB, env ...string) *Child {
	t.Helper()
	return StartCmd(t, Command(env...))
}

// StartCmd connects pipes to cmd's stdin and stdout, starts it, and has
// t's cleanup kill and reap it. The running process is the returned
// Child's Cmd: under Wine, a start CreateProcess failed transiently is
// retried on a copy of cmd (see startPiped). It fails t if the process
// cannot start.
func StartCmd(t TB, cmd *exec.Cmd) *Child {
	t.Helper()
	cmd, in, out, err := startPiped(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &Child{T: t, Cmd: cmd, In: in, Out: bufio.NewScanner(out)}
}

// Expect reads the child's next stdout line, blocking without a time
// limit, and checks that it starts with prefix. It returns the rest of the
// line with surrounding white space removed. It fails the test if the
// child's stdout ends first or the line has another prefix.
func (c *Child) Expect(prefix string) string {
	c.T.Helper()
	if !c.Out.Scan() {
		c.T.Fatalf("child %d ended before %q: %v", c.Cmd.Process.Pid, prefix, c.Out.Err())
	}
	line := c.Out.Text()
	if !strings.HasPrefix(line, prefix) {
		c.T.Fatalf("child %d said %q, want prefix %q", c.Cmd.Process.Pid, line, prefix)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, prefix))
}

// Send writes line and a newline to the child's stdin. It fails the test
// if the write fails (the child has closed its stdin or exited).
func (c *Child) Send(line string) {
	c.T.Helper()
	if _, err := fmt.Fprintln(c.In, line); err != nil {
		c.T.Fatal(err)
	}
}

// Eventually polls cond every 2 ms until it holds, and fails t ("timed out
// waiting for what") if it still does not after 20 s. It is
// Poll(t, what, 20*time.Second, 2*time.Millisecond, cond).
func Eventually(t TB, what string, cond func() bool) {
	t.Helper()
	Poll(t, what, 20*time.Second, 2*time.Millisecond, cond)
}

// Poll calls cond, sleeping every between calls, until it returns true,
// and fails t ("timed out waiting for what") once a call after timeout has
// passed still returns false. cond is always called at least once.
func Poll(t TB, what string, timeout, every time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(every)
	}
}

// GoraceNoExitSleep returns the GORACE environment entry for a child: the
// parent's GORACE options followed by atexit_sleep_ms=0. A race-built
// process otherwise sleeps 1 s when it exits; other builds ignore GORACE.
func GoraceNoExitSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
