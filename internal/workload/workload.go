// Package workload is the multi-process write workload that cleolease is
// measured and demonstrated with, shared by "cleolease bench", "cleolease
// demo" (cmd/cleolease) and BenchmarkContention (bench_multi_test.go):
//
//   - the peers cleolease is compared with and the DSN each opens a file
//     with (peer.go: Raw, TxLock, Flock, Cleolease);
//   - the transactions (counter.go: Counter, the contention benchmark's
//     read-modify-write; tracker.go: Tracker, the demo's task tracker),
//     with what creates and checks their data;
//   - the worker loop (Run) and its per-process Result, and the figures
//     over all processes (stats.go: Summarize);
//   - the benchmark loads (Loads);
//   - the line protocol between a parent and its worker processes
//     (protocol.go: Worker in the child, Fleet in the parent, on top of
//     internal/proctest).
//
// Every transaction reads a value and writes it back changed, so a lost
// update shows in the data afterwards.
package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/writer"
)

// Spec is what one worker process runs.
type Spec struct {
	// Index numbers the worker among its fleet (written to the data).
	Index int `json:"index"`
	// Peer is how the worker opens and writes the file.
	Peer Peer `json:"peer"`
	// Base is the SQLite driver the peer runs on ("" is go-sqlite3).
	Base Base `json:"base,omitempty"`
	// Sync is the synchronous level ("" is NORMAL).
	Sync string `json:"sync,omitempty"`
	// Workload is "counter" or "tracker".
	Workload string `json:"workload"`
	// Goroutines is the number of writing goroutines (at least 1).
	Goroutines int `json:"goroutines"`
	// Duration is how long the goroutines write.
	Duration time.Duration `json:"duration_ns"`
	// Work is the time.Sleep inside each transaction (simulated work).
	Work time.Duration `json:"work_ns"`
	// Lane, if not empty, is the lane (in scope main) cleolease writes
	// on; otherwise the DSN's default lane.
	Lane string `json:"lane,omitempty"`
}

// Result is one worker process's figures.
type Result struct {
	Index   int               `json:"index"`             // Spec.Index
	PID     int               `json:"pid"`               // the worker's process id
	Commits int64             `json:"commits"`           // committed transactions
	Errors  map[string]int64  `json:"errors"`            // failed transactions by class (Classify)
	Samples map[string]string `json:"samples,omitempty"` // one message per error class
	Ops     map[string]int64  `json:"ops"`               // commits by operation
	// Latencies are the committed transactions' times, begin to commit,
	// in microseconds.
	Latencies []int64 `json:"lat_us"`
	// Landed is, for each committed write, the time from its first attempt
	// to its commit in microseconds: failed attempts (lock errors) are
	// retried at once, as an application would, and their time counts.
	Landed []int64 `json:"land_us"`
	// Lease is the cleolease driver's counters in this process (nil for
	// the other peers).
	Lease *lease.Stats `json:"lease,omitempty"`
	// Extra carries figures a caller adds (BenchmarkResources: memory and
	// descriptors), and Notes its remarks.
	Extra map[string]int64 `json:"extra,omitempty"`
	Notes []string         `json:"notes,omitempty"`
}

// State is one writing goroutine's: what a transaction may use.
type State struct {
	Rng    *rand.Rand    // the goroutine's own random numbers
	Worker int           // Spec.Index
	G      int           // the goroutine's index in its worker
	Work   time.Duration // Spec.Work
}

// Think simulates the work done inside a transaction (Spec.Work).
func (s *State) Think() {
	if s.Work > 0 {
		time.Sleep(s.Work)
	}
}

// Workload is one kind of write transaction.
type Workload interface {
	// Tx runs one transaction on db and names its operation.
	Tx(ctx context.Context, db *sql.DB, s *State) (op string, err error)
}

// New returns the workload named name ("counter" or "tracker", as in
// Spec.Workload), ready to run on db (Tracker reads the projects it works
// on first).
func New(ctx context.Context, name string, db *sql.DB) (Workload, error) {
	switch name {
	case "counter":
		return Counter{}, nil
	case "tracker":
		return LoadTracker(ctx, db)
	}
	return nil, fmt.Errorf("unknown workload %q", name)
}

// Run runs s.Goroutines goroutines of w's transactions on db for
// s.Duration (or until ctx ends) and returns the worker's figures; path is
// the database file (the Flock peer locks path+"-flock"). progress, if not
// nil, is called about every 100 ms with the commits and failed
// transactions so far, and once at the end. A failed transaction is
// counted and retried at once.
func Run(ctx context.Context, db *sql.DB, w Workload, s Spec, path string, progress func(commits, errs int64)) (Result, error) {
	tx := w.Tx
	if s.Peer == Flock {
		lf, err := openFlock(path + "-flock")
		if err != nil {
			return Result{}, err
		}
		defer lf.close()
		var mu sync.Mutex
		tx = func(ctx context.Context, db *sql.DB, st *State) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			if err := lf.lock(); err != nil {
				return "", err
			}
			defer lf.unlock()
			return w.Tx(ctx, db, st)
		}
	}
	if s.Peer == Cleolease && s.Lane != "" {
		ctx = writer.WithLane(ctx, "main", s.Lane)
	}
	deadline := time.Now().Add(s.Duration)
	var commits, errs atomic.Int64
	res := Result{Index: s.Index, PID: os.Getpid(), Errors: map[string]int64{}, Samples: map[string]string{}, Ops: map[string]int64{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range max(s.Goroutines, 1) {
		wg.Go(func() {
			st := &State{Rng: rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g))), Worker: s.Index, G: g, Work: s.Work}
			var lat, landed []int64
			errsBy := map[string]int64{}
			samples := map[string]string{}
			ops := map[string]int64{}
			var first time.Time // the first attempt of the write being retried
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if first.IsZero() {
					first = t0
				}
				op, err := tx(ctx, db, st)
				if err != nil {
					c := Classify(err)
					errsBy[c]++
					if _, ok := samples[c]; !ok {
						samples[c] = ShortErr(err)
					}
					errs.Add(1)
					continue
				}
				lat = append(lat, time.Since(t0).Microseconds())
				landed = append(landed, time.Since(first).Microseconds())
				first = time.Time{}
				ops[op]++
				commits.Add(1)
			}
			mu.Lock()
			defer mu.Unlock()
			res.Latencies = append(res.Latencies, lat...)
			res.Landed = append(res.Landed, landed...)
			for k, v := range errsBy {
				res.Errors[k] += v
			}
			for k, v := range samples {
				res.Samples[k] = v
			}
			for k, v := range ops {
				res.Ops[k] += v
			}
		})
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			res.Commits = commits.Load()
			progress(res.Commits, errs.Load())
			if s.Peer == Cleolease {
				if st, err := writer.Stats(ctx, db); err == nil {
					res.Lease = &st
				}
			}
			return res, nil
		case <-tick.C:
			progress(commits.Load(), errs.Load())
		}
	}
}

// Classify names a failed transaction's error class: "locked" (SQLite's
// busy or locked), "lease lost", "lease unavailable", "cancelled" or
// "other".
func Classify(err error) string {
	switch {
	case IsLockErr(err):
		return "locked"
	case errors.Is(err, writer.ErrLeaseLost):
		return "lease lost"
	case errors.Is(err, writer.ErrLeaseUnavailable):
		return "lease unavailable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "other"
}

// IsLockErr reports SQLite's "database is locked" family (SQLITE_BUSY,
// SQLITE_LOCKED), typed (from any base linked in) or as text.
func IsLockErr(err error) bool {
	if sqlbase.IsBusy(err) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "database is locked") || strings.Contains(s, "database table is locked") || strings.Contains(s, "SQLITE_BUSY")
}

// ShortErr is an error on one line of at most about 240 characters,
// without the migration text golang-migrate appends ("… in line 0:
// CREATE TABLE …").
func ShortErr(err error) string {
	s := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	if i := strings.Index(s, " in line "); i > 0 {
		s = s[:i]
	}
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// Load is one benchmark workload: Procs processes × Goroutines writers of
// the Counter transaction, with Work inside each — or, when Short, Procs
// loops each running one short-lived process after another (Once: start,
// open, one transaction, close, exit; RunShort).
type Load struct {
	ID         string        `json:"id"`         // as in benchmark names: load=ID
	Name       string        `json:"name"`       // for people
	Procs      int           `json:"procs"`      // worker processes (Short: loops)
	Goroutines int           `json:"goroutines"` // writers per process
	Work       time.Duration `json:"work_ns"`    // inside each transaction
	// Scaling marks the long loads (many processes) that run only when
	// asked for.
	Scaling bool `json:"scaling,omitempty"`
	// Short makes each write a process of its own (a CLI command): the
	// figures are per invocation, start to exit.
	Short bool `json:"short,omitempty"`
	// Quiet adds one process writing without work on lane QuietLane
	// beside the Procs processes of lane "bench": the figures are that
	// process's alone, its latency its wait for the other lane's
	// transactions (lanes meet only at SQLite's write lock, which the
	// write turn orders: issue 41).
	Quiet bool `json:"quiet,omitempty"`
}

// QuietLane is the lane of a Quiet load's extra process.
const QuietLane = "quiet"

// Loads are the benchmark loads of "cleolease bench" and
// BenchmarkContention (the targets of the project's issues 8, 15 and 29).
var Loads = []Load{
	{ID: "1x1", Name: "uncontended: 1 process × 1 goroutine", Procs: 1, Goroutines: 1},
	{ID: "1x8", Name: "1 process × 8 goroutines, no work (a server's pool)", Procs: 1, Goroutines: 8},
	{ID: "4x2", Name: "4 processes × 2 goroutines, no work", Procs: 4, Goroutines: 2},
	{ID: "8x1-1ms", Name: "8 processes × 1 goroutine, 1 ms work in each tx", Procs: 8, Goroutines: 1, Work: time.Millisecond},
	{ID: "cli1", Name: "short-lived processes one at a time: start, open, one tx, close, exit (a CLI)", Procs: 1, Goroutines: 1, Short: true},
	{ID: "cli8", Name: "8 loops of short-lived processes at once (a CLI that 8 agents run)", Procs: 8, Goroutines: 1, Short: true},
	{ID: "2lanes", Name: "2 processes × 300 ms transactions on lane bench, 1 writer on lane quiet (the figures are its)", Procs: 2, Goroutines: 1, Work: 300 * time.Millisecond, Quiet: true},
	{ID: "16x1-1ms", Name: "16 processes × 1 goroutine, 1 ms work in each tx", Procs: 16, Goroutines: 1, Work: time.Millisecond, Scaling: true},
	{ID: "32x1-1ms", Name: "32 processes × 1 goroutine, 1 ms work in each tx", Procs: 32, Goroutines: 1, Work: time.Millisecond, Scaling: true},
}

// Peers are the peers the load is measured on, in the order they run:
// BenchPeers, with Pool1 before Cleolease where one process writes (the
// peer that setting is for).
func (l Load) Peers() []Peer {
	if l.Procs != 1 || l.Short {
		return BenchPeers
	}
	ps := make([]Peer, 0, len(BenchPeers)+1)
	for _, p := range BenchPeers {
		if p == Cleolease {
			ps = append(ps, Pool1)
		}
		ps = append(ps, p)
	}
	return ps
}

// LoadIDs lists the IDs of Loads, for messages.
func LoadIDs() string {
	ids := make([]string, len(Loads))
	for i, l := range Loads {
		ids[i] = l.ID
	}
	return strings.Join(ids, ", ")
}
