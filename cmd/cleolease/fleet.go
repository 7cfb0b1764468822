package main

// The parent side of the worker protocol (see worker.go): start N worker
// processes, move them through the barriers together, collect results.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// proc is one running worker process.
type proc struct {
	spec    workerSpec
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan string // protocol lines other than progress
	commits atomic.Int64
	errs    atomic.Int64
	stderr  *tailBuffer
}

// tailBuffer keeps the last few KB a worker wrote to stderr.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// fleet is a set of worker processes moving through the protocol together.
type fleet struct {
	procs []*proc
}

// phaseTimeout bounds each barrier: a safety net against a wedged worker,
// never a synchronisation.
const phaseTimeout = 2 * time.Minute

func startFleet(ctx context.Context, specs []workerSpec) (*fleet, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f := &fleet{}
	for _, s := range specs {
		b, _ := json.Marshal(s)
		cmd := exec.CommandContext(ctx, exe, "worker", "--spec", string(b))
		p := &proc{spec: s, cmd: cmd, lines: make(chan string, 16), stderr: &tailBuffer{}}
		cmd.Stderr = p.stderr
		cmd.WaitDelay = 5 * time.Second
		if p.in, err = cmd.StdinPipe(); err != nil {
			f.kill()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			f.kill()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			f.kill()
			return nil, fmt.Errorf("start worker: %w", err)
		}
		f.procs = append(f.procs, p)
		go p.read(out)
	}
	return f, nil
}

// read splits a worker's stdout into progress updates and protocol lines.
func (p *proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20) // RESULT lines carry every latency
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "P "); ok {
			if c, e, ok := strings.Cut(rest, " "); ok {
				n, _ := strconv.ParseInt(c, 10, 64)
				m, _ := strconv.ParseInt(e, 10, 64)
				p.commits.Store(n)
				p.errs.Store(m)
			}
			continue
		}
		p.lines <- line
	}
	close(p.lines)
}

func (p *proc) expect(prefix string) (string, error) {
	t := time.NewTimer(phaseTimeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			err := p.cmd.Wait()
			why := p.stderr.lastLine()
			if why == "" && err != nil {
				why = err.Error()
			}
			return "", fmt.Errorf("worker %d (pid %d) ended before %s: %s", p.spec.Index, p.cmd.Process.Pid, prefix, why)
		}
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return "", fmt.Errorf("worker %d said %q, want %s", p.spec.Index, line, prefix)
		}
		return strings.TrimSpace(rest), nil
	case <-t.C:
		return "", fmt.Errorf("worker %d: no %s within %s", p.spec.Index, prefix, phaseTimeout)
	}
}

// gather waits for prefix from every worker, in worker order.
func (f *fleet) gather(prefix string) ([]string, error) {
	out := make([]string, len(f.procs))
	errs := make([]error, len(f.procs))
	var wg sync.WaitGroup
	for i, p := range f.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = p.expect(prefix)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// broadcast sends one line to every worker, as close together as possible.
func (f *fleet) broadcast(line string) error {
	b := []byte(line + "\n")
	for _, p := range f.procs {
		if _, err := p.in.Write(b); err != nil {
			return fmt.Errorf("worker %d: %w", p.spec.Index, err)
		}
	}
	return nil
}

// progress sums the workers' latest progress reports.
func (f *fleet) progress() (commits, errs int64) {
	for _, p := range f.procs {
		commits += p.commits.Load()
		errs += p.errs.Load()
	}
	return commits, errs
}

// wait closes the workers' stdin and reaps them.
func (f *fleet) wait() error {
	var first error
	for _, p := range f.procs {
		p.in.Close()
		if err := p.cmd.Wait(); err != nil && first == nil {
			first = fmt.Errorf("worker %d: %v: %s", p.spec.Index, err, p.stderr.lastLine())
		}
	}
	return first
}

func (f *fleet) kill() {
	for _, p := range f.procs {
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
		p.in.Close()
		p.cmd.Wait()
	}
}

// fleetRun is one pass of the protocol.
type fleetRun struct {
	specs []workerSpec
	// migrated runs after every worker reported MIGRATED and returns the
	// database the workload runs on.
	migrated func(outs []migrationOutcome) (workloadDB string, err error)
	// ticker is called about every 100 ms while the workload runs.
	ticker func(elapsed time.Duration, commits, errs int64)
	// migrating is called once when the migration barrier opens.
	migrating func()
}

func (fr fleetRun) run(ctx context.Context) ([]migrationOutcome, []workerResult, error) {
	f, err := startFleet(ctx, fr.specs)
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			f.kill()
		}
	}()
	if _, err := f.gather("READY"); err != nil {
		return nil, nil, err
	}
	if fr.migrating != nil {
		fr.migrating()
	}
	if err := f.broadcast("MIGRATE"); err != nil {
		return nil, nil, err
	}
	lines, err := f.gather("MIGRATED")
	if err != nil {
		return nil, nil, err
	}
	outs := make([]migrationOutcome, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &outs[i]); err != nil {
			return nil, nil, fmt.Errorf("worker %d: bad MIGRATED: %v", i, err)
		}
	}
	wdb, err := fr.migrated(outs)
	if err != nil {
		return outs, nil, err
	}
	if err := f.broadcast("OPEN " + wdb); err != nil {
		return outs, nil, err
	}
	if _, err := f.gather("OPENED"); err != nil {
		return outs, nil, err
	}
	start := time.Now()
	if err := f.broadcast("GO"); err != nil {
		return outs, nil, err
	}
	type gathered struct {
		lines []string
		err   error
	}
	done := make(chan gathered, 1)
	go func() {
		l, err := f.gather("RESULT")
		done <- gathered{l, err}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var g gathered
wait:
	for {
		select {
		case g = <-done:
			break wait
		case <-tick.C:
			if fr.ticker != nil {
				c, e := f.progress()
				fr.ticker(time.Since(start), c, e)
			}
		}
	}
	if g.err != nil {
		return outs, nil, g.err
	}
	results := make([]workerResult, len(g.lines))
	for i, l := range g.lines {
		d := json.NewDecoder(bytes.NewReader([]byte(l)))
		if err := d.Decode(&results[i]); err != nil {
			return outs, nil, fmt.Errorf("worker %d: bad RESULT: %v", i, err)
		}
	}
	ok = true
	if err := f.wait(); err != nil {
		return outs, results, err
	}
	return outs, results, nil
}
