package proctest

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Proc is a started child process spoken to in lines, for programs: unlike
// Child, its methods return errors and Expect has a time limit. Start one
// with Launch; end it with Wait or Kill.
type Proc struct {
	// Name names the process in errors ("worker 3").
	Name string
	// Cmd is the running process.
	Cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // the stdout lines filter did not take
	tail  *tailBuffer
	once  sync.Once
	err   error // how Cmd.Wait ended
}

// Launch connects pipes to cmd's stdin and stdout and starts it; the
// running process is the returned Proc's Cmd (a copy of cmd if a start
// was retried, as for StartCmd). Each line the child writes to stdout
// goes first to filter, if not nil; the lines filter does not take
// (returns false for) are read by Expect, in order. The last few KB of the
// child's stderr are kept for error messages (and still written to
// cmd.Stderr if the caller set one). Lines may be up to 256 MiB long.
func Launch(name string, cmd *exec.Cmd, filter func(line string) bool) (*Proc, error) {
	p := &Proc{Name: name, lines: make(chan string, 16), tail: &tailBuffer{}}
	if cmd.Stderr == nil {
		cmd.Stderr = p.tail
	} else {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, p.tail)
	}
	var out io.ReadCloser
	var err error
	if p.Cmd, p.in, out, err = startPiped(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 256<<20)
		for sc.Scan() {
			if filter == nil || !filter(sc.Text()) {
				p.lines <- sc.Text()
			}
		}
		close(p.lines)
	}()
	return p, nil
}

// Expect waits at most timeout for the child's next line (of those the
// filter left) and checks that it starts with prefix; it returns the rest
// of the line with surrounding white space removed. If the child's stdout
// ends first, the error says how the child ended and quotes the last line
// of its stderr.
func (p *Proc) Expect(prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			err := p.reap()
			why := p.tail.lastLine()
			if why == "" && err != nil {
				why = err.Error()
			}
			return "", fmt.Errorf("%s (pid %d) ended before %s: %s", p.Name, p.Cmd.Process.Pid, prefix, why)
		}
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return "", fmt.Errorf("%s said %q, want %s", p.Name, line, prefix)
		}
		return strings.TrimSpace(rest), nil
	case <-t.C:
		return "", fmt.Errorf("%s: no %s within %s", p.Name, prefix, timeout)
	}
}

// Send writes line and a newline to the child's stdin.
func (p *Proc) Send(line string) error {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	return nil
}

// Wait closes the child's stdin and waits for it to exit; the error, if it
// failed, quotes the last line of its stderr.
func (p *Proc) Wait() error {
	p.in.Close()
	if err := p.reap(); err != nil {
		return fmt.Errorf("%s: %v: %s", p.Name, err, p.tail.lastLine())
	}
	return nil
}

// Kill kills the child (SIGKILL) and reaps it.
func (p *Proc) Kill() {
	p.Cmd.Process.Kill()
	p.in.Close()
	p.reap()
}

// reap waits for the child once and remembers how it ended.
func (p *Proc) reap() error {
	p.once.Do(func() { p.err = p.Cmd.Wait() })
	return p.err
}

// Group is a set of child processes moving through a line protocol
// together: every child receives the same orders and answers each one.
type Group []*Proc

// Gather waits, at most timeout for each, for the next line of every
// child, which must start with prefix, and returns the rests of the lines
// in the group's order. The children are read at once, so a slow one does
// not hold up the others' reads.
func (g Group) Gather(prefix string, timeout time.Duration) ([]string, error) {
	out := make([]string, len(g))
	errs := make([]error, len(g))
	var wg sync.WaitGroup
	for i, p := range g {
		wg.Go(func() { out[i], errs[i] = p.Expect(prefix, timeout) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Broadcast sends line to every child, one after the other with nothing
// in between, so they receive it as close together as possible.
func (g Group) Broadcast(line string) error {
	for _, p := range g {
		if err := p.Send(line); err != nil {
			return err
		}
	}
	return nil
}

// Wait waits for every child (Proc.Wait) and returns the first failure.
func (g Group) Wait() error {
	var first error
	for _, p := range g {
		if err := p.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Kill kills and reaps every child.
func (g Group) Kill() {
	for _, p := range g {
		p.Kill()
	}
}

// tailBuffer keeps the last 4 KB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

// Write keeps b, dropping what is older than the last 4 KB.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(b), nil
}

// lastLine is the last non-empty line written.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
