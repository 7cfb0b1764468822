package workload

// The line protocol between a parent and its worker processes. The parent
// starts the workers (Fleet, over internal/proctest), each opens the
// database, then:
//
//	worker → OPENED           it is ready to write
//	parent → GO               every worker starts at once (Fleet.Measure)
//	worker → P COMMITS ERRORS every 100 ms while it writes
//	worker → RESULT {json}    its Result, then it exits
//
// A parent may run phases of its own before (cmd/cleolease's demo:
// READY, MIGRATE, MIGRATED, OPEN), with Worker.Say and Worker.Expect in
// the worker and Fleet.Broadcast and Fleet.Gather in the parent.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleocode/cleolease/internal/proctest"
)

// Worker is a worker process's end of the protocol: its orders come from
// in, its reports go to out, one line each.
type Worker struct {
	in  *bufio.Scanner
	mu  sync.Mutex
	out io.Writer
}

// NewWorker returns the worker end reading in and writing out (the
// process's stdin and stdout).
func NewWorker(in io.Reader, out io.Writer) *Worker {
	return &Worker{in: bufio.NewScanner(in), out: out}
}

// Say writes one line to the parent.
func (w *Worker) Say(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.out, format+"\n", args...)
}

// Expect reads the parent's next line, which must start with prefix, and
// returns the rest without surrounding white space.
func (w *Worker) Expect(prefix string) (string, error) {
	if !w.in.Scan() {
		return "", fmt.Errorf("parent went away before %s", prefix)
	}
	line := w.in.Text()
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return "", fmt.Errorf("parent said %q, want %s", line, prefix)
	}
	return strings.TrimSpace(rest), nil
}

// Measure prepares s's workload on db, says OPENED, waits for GO, runs it
// (Run, reporting progress lines) and returns the result, to be reported
// with Report once the caller has added what it measures itself.
func (w *Worker) Measure(ctx context.Context, db *sql.DB, s Spec, path string) (Result, error) {
	wl, err := New(ctx, s.Workload, db)
	if err != nil {
		return Result{}, err
	}
	w.Say("OPENED")
	if _, err := w.Expect("GO"); err != nil {
		return Result{}, err
	}
	return Run(ctx, db, wl, s, path, func(commits, errs int64) { w.Say("P %d %d", commits, errs) })
}

// Report sends the result to the parent: the worker's last line.
func (w *Worker) Report(r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	w.Say("RESULT %s", b)
	return nil
}

// PhaseTimeout bounds each step of the protocol but the workload itself:
// a safety net against a wedged worker, never a synchronisation.
const PhaseTimeout = 2 * time.Minute

// Fleet is the parent's end: the worker processes, moving through the
// protocol together.
type Fleet struct {
	procs   proctest.Group
	commits []atomic.Int64 // each worker's latest progress report
	errs    []atomic.Int64
}

// StartFleet starts one worker process per command (each set up to play
// a worker: a hidden subcommand, a test role).
func StartFleet(cmds []*exec.Cmd) (*Fleet, error) {
	f := &Fleet{commits: make([]atomic.Int64, len(cmds)), errs: make([]atomic.Int64, len(cmds))}
	for i, cmd := range cmds {
		p, err := proctest.Launch(fmt.Sprintf("worker %d", i), cmd, func(line string) bool {
			rest, ok := strings.CutPrefix(line, "P ")
			if !ok {
				return false
			}
			if c, e, ok := strings.Cut(rest, " "); ok {
				n, _ := strconv.ParseInt(c, 10, 64)
				m, _ := strconv.ParseInt(e, 10, 64)
				f.commits[i].Store(n)
				f.errs[i].Store(m)
			}
			return true
		})
		if err != nil {
			f.Kill()
			return nil, err
		}
		f.procs = append(f.procs, p)
	}
	return f, nil
}

// Gather waits for a line starting with prefix from every worker and
// returns the rests, in worker order.
func (f *Fleet) Gather(prefix string) ([]string, error) {
	return f.procs.Gather(prefix, PhaseTimeout)
}

// Broadcast sends line to every worker.
func (f *Fleet) Broadcast(line string) error { return f.procs.Broadcast(line) }

// Progress sums the workers' latest progress reports.
func (f *Fleet) Progress() (commits, errs int64) {
	for i := range f.commits {
		commits += f.commits[i].Load()
		errs += f.errs[i].Load()
	}
	return commits, errs
}

// Measure waits until every worker said OPENED, says GO to all, and
// collects their results; d is how long they write. tick, if not nil, is
// called about every 100 ms meanwhile with the time since GO and the
// summed progress.
func (f *Fleet) Measure(d time.Duration, tick func(elapsed time.Duration, commits, errs int64)) ([]Result, error) {
	if _, err := f.Gather("OPENED"); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := f.Broadcast("GO"); err != nil {
		return nil, err
	}
	type gathered struct {
		lines []string
		err   error
	}
	done := make(chan gathered, 1)
	go func() {
		l, err := f.procs.Gather("RESULT", d+PhaseTimeout)
		done <- gathered{l, err}
	}()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case g := <-done:
			if g.err != nil {
				return nil, g.err
			}
			results := make([]Result, len(g.lines))
			for i, l := range g.lines {
				if err := json.Unmarshal([]byte(l), &results[i]); err != nil {
					return nil, fmt.Errorf("worker %d: bad RESULT: %v", i, err)
				}
			}
			return results, nil
		case <-t.C:
			if tick != nil {
				c, e := f.Progress()
				tick(time.Since(start), c, e)
			}
		}
	}
}

// Wait closes the workers' stdin and reaps them; it returns the first
// failure.
func (f *Fleet) Wait() error { return f.procs.Wait() }

// Kill kills and reaps every worker.
func (f *Fleet) Kill() { f.procs.Kill() }
