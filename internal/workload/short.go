package workload

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleocode/cleolease/writer"
)

// Once is one invocation of a short-lived process (a Load that is Short):
// it opens path on s.Base with s.Peer's settings, runs one Counter
// transaction (inside the exclusive flock for Flock; on s.Lane for
// Cleolease) and closes the database, as a CLI command that writes once
// does. Its error is the first one met; the database is closed either way.
func Once(ctx context.Context, s Spec, path string) (err error) {
	db, err := OpenOn(ctx, s.Base, s.Peer, path, s.Sync)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	if s.Peer == Cleolease && s.Lane != "" {
		ctx = writer.WithLane(ctx, "main", s.Lane)
	}
	st := &State{Rng: rand.New(rand.NewPCG(uint64(os.Getpid()), 0)), Worker: s.Index, Work: s.Work}
	if s.Peer == Flock {
		lf, err := openFlock(path + "-flock")
		if err != nil {
			return err
		}
		defer lf.close()
		if err := lf.lock(); err != nil {
			return err
		}
		defer lf.unlock()
	}
	_, err = Counter{}.Tx(ctx, db, st)
	return err
}

// RunShort runs loops loops at once, each starting the processes start
// makes for it (each one Once) one after another until d has passed or ctx
// ends, and returns one Result per loop — Commits: the processes that
// exited 0; Latencies: their time from start to exit (µs); Errors and
// Samples: the others, classified by their output's last line;
// Extra["cpu_us"]: the user and system CPU time of all its processes (µs)
// — and the wall time from the first start to the last exit. progress, if
// not nil, is called after each process with the totals so far. An error
// is returned only when a process cannot be started.
func RunShort(ctx context.Context, loops int, d time.Duration, start func(loop int) *exec.Cmd, progress func(commits, errs int64)) ([]Result, time.Duration, error) {
	results := make([]Result, loops)
	var commits, errs atomic.Int64
	var startErr error
	var once sync.Once
	began := time.Now()
	deadline := began.Add(d)
	var wg sync.WaitGroup
	for i := range loops {
		wg.Go(func() {
			r := Result{Index: i, Errors: map[string]int64{}, Samples: map[string]string{}, Ops: map[string]int64{}, Extra: map[string]int64{}}
			for time.Now().Before(deadline) && ctx.Err() == nil {
				cmd := start(i)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				t0 := time.Now()
				err := cmd.Run()
				took := time.Since(t0)
				if cmd.ProcessState == nil { // never started
					once.Do(func() { startErr = err })
					break
				}
				r.Extra["cpu_us"] += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()
				if err != nil {
					msg := lastLine(out.String())
					if msg == "" {
						msg = err.Error()
					}
					c := Classify(errors.New(msg))
					r.Errors[c]++
					if _, ok := r.Samples[c]; !ok {
						r.Samples[c] = ShortErr(errors.New(msg))
					}
					errs.Add(1)
				} else {
					r.Commits++
					r.Ops["invocation"]++
					r.Latencies = append(r.Latencies, took.Microseconds())
					r.Landed = append(r.Landed, took.Microseconds())
					commits.Add(1)
				}
				if progress != nil {
					progress(commits.Load(), errs.Load())
				}
			}
			results[i] = r
		})
	}
	wg.Wait()
	return results, time.Since(began), startErr
}

// lastLine is the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
