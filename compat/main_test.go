package compat_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm/logger"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/lease"
)

// Multi-process tests re-execute the test binary with COMPAT_ROLE set;
// TestMain then runs that role instead of the tests. A child opens the
// database with its client, prints "READY", waits for "GO" on stdin (so
// that every child starts writing at the same moment), runs its workload
// and prints one "DONE <json report>" line. It exits 0 unless something
// failed; errors are also reported in the JSON.
var roles = map[string]func(ctx context.Context, a childArgs) (report, error){}

// childArgs is what a child reads from its environment.
type childArgs struct {
	Driver  string // driver name: "cleolease", or "sqlite3" for a control run
	DSN     string
	Procs   int // how many children run at once (for the shared assertions)
	Workers int // goroutines per child
	N       int // iterations per goroutine
	Index   int // this child's index among its siblings, to vary a setting
}

// report is what a child prints when done.
type report struct {
	PID        int            `json:"pid"`
	Ops        map[string]int `json:"ops"`             // successful operations by kind
	Errors     []string       `json:"errors"`          // every error met, with the operation
	LockErrors int            `json:"lock_errors"`     // errors saying "database is locked"/busy
	Lease      *lease.Stats   `json:"lease,omitempty"` // the child's lease counters (driver cleolease)
}

// collectLease records the lease counters of db's file in this process
// into r, for driver "cleolease".
func (r *report) collectLease(ctx context.Context, a childArgs, db *sql.DB) {
	if a.Driver != "cleolease" {
		return
	}
	st, err := cleolease.Stats(ctx, db)
	if err != nil {
		r.fail("cleolease.Stats", err)
		return
	}
	r.Lease = &st
}

// merge adds a worker's report to r.
func (r *report) merge(o report) {
	for k, v := range o.Ops {
		if r.Ops == nil {
			r.Ops = map[string]int{}
		}
		r.Ops[k] += v
	}
	r.Errors = append(r.Errors, o.Errors...)
	r.LockErrors += o.LockErrors
}

func (r *report) add(op string) {
	if r.Ops == nil {
		r.Ops = map[string]int{}
	}
	r.Ops[op]++
}

func (r *report) fail(op string, err error) {
	r.Errors = append(r.Errors, op+": "+err.Error())
	if isLockError(err) {
		r.LockErrors++
	}
}

// isLockError reports the errors cleolease exists to prevent.
func isLockError(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "database is locked") || strings.Contains(s, "busy") ||
		strings.Contains(s, "database table is locked")
}

func TestMain(m *testing.M) {
	// GORM's default logger prints every failed statement (the tests make
	// some on purpose) to the process's standard output; the examples use
	// the default logger, as applications do.
	logger.Default = logger.Discard
	if role := os.Getenv("COMPAT_ROLE"); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

func runChild(role string) int {
	f, ok := roles[role]
	if !ok {
		fmt.Println("ERR unknown role", role)
		return 2
	}
	a := childArgs{Driver: os.Getenv("COMPAT_DRIVER"), DSN: os.Getenv("COMPAT_DSN")}
	a.Procs, _ = strconv.Atoi(os.Getenv("COMPAT_PROCS"))
	a.Workers, _ = strconv.Atoi(os.Getenv("COMPAT_WORKERS"))
	a.N, _ = strconv.Atoi(os.Getenv("COMPAT_N"))
	a.Index, _ = strconv.Atoi(os.Getenv("COMPAT_INDEX"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := f(ctx, a)
	r.PID = os.Getpid()
	if err != nil {
		r.fail("setup", err)
	}
	b, _ := json.Marshal(r)
	fmt.Println("DONE", string(b))
	if len(r.Errors) > 0 {
		return 1
	}
	return 0
}

// ready is called by a child once its database is open: it announces
// itself and blocks until the parent says GO.
func ready() error {
	fmt.Println("READY")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return fmt.Errorf("waiting for GO: %w", err)
	}
	if strings.TrimSpace(line) != "GO" {
		return fmt.Errorf("parent said %q, want GO", line)
	}
	return nil
}

// runWorkers runs fn on a.Workers goroutines and waits for them.
func runWorkers(a childArgs, fn func(w int)) {
	var wg sync.WaitGroup
	for w := range a.Workers {
		wg.Go(func() { fn(w) })
	}
	wg.Wait()
}

// run is one multi-process run: the role, its arguments, and each
// child's report.
type run struct {
	args    childArgs
	reports []report
	elapsed time.Duration
}

// tempDSN returns a "file:" DSN for a new database in t's temp directory.
func tempDSN(t testing.TB) (path, dsn string) {
	path = filepath.Join(t.TempDir(), "compat.db")
	return path, "file:" + path
}

// runProcs starts a.Procs children playing role, waits until all are
// READY, releases them together and collects their reports. It fails t
// if a child dies without a report.
func runProcs(t *testing.T, role string, a childArgs) run {
	t.Helper()
	if a.Driver == "" {
		a.Driver = "cleolease"
	}
	type kid struct {
		*proctest.Child
		errb strings.Builder
	}
	kids := make([]*kid, a.Procs)
	for i := range kids {
		cmd := proctest.Command(
			"COMPAT_ROLE="+role, "COMPAT_DRIVER="+a.Driver, "COMPAT_DSN="+a.DSN,
			"COMPAT_PROCS="+strconv.Itoa(a.Procs), "COMPAT_WORKERS="+strconv.Itoa(a.Workers),
			"COMPAT_N="+strconv.Itoa(a.N), "COMPAT_INDEX="+strconv.Itoa(i))
		k := &kid{}
		cmd.Stderr = &syncWriter{b: &k.errb}
		k.Child = proctest.StartCmd(t, cmd)
		k.Out.Buffer(nil, 16<<20)
		kids[i] = k
	}
	next := func(k *kid) (string, bool) {
		for k.Out.Scan() {
			line := k.Out.Text()
			if line == "READY" || strings.HasPrefix(line, "DONE ") || strings.HasPrefix(line, "ERR ") {
				return line, true
			}
			t.Logf("child %d: %s", k.Cmd.Process.Pid, line)
		}
		return "", false
	}
	for _, k := range kids {
		line, ok := next(k)
		if !ok || line != "READY" {
			k.Cmd.Wait()
			t.Fatalf("child %d said %q before READY; stderr:\n%s", k.Cmd.Process.Pid, line, k.errb.String())
		}
	}
	start := time.Now()
	for _, k := range kids {
		k.Send("GO")
	}
	r := run{args: a, reports: make([]report, len(kids))}
	var wg sync.WaitGroup
	errs := make([]string, len(kids))
	for i, k := range kids {
		wg.Go(func() {
			line, ok := next(k)
			k.Cmd.Wait()
			rest, found := strings.CutPrefix(line, "DONE ")
			if !ok || !found {
				errs[i] = fmt.Sprintf("child %d ended without a report (last line %q); stderr:\n%s", k.Cmd.Process.Pid, line, k.errb.String())
				return
			}
			if err := json.Unmarshal([]byte(rest), &r.reports[i]); err != nil {
				errs[i] = fmt.Sprintf("child %d: bad report %q: %v", k.Cmd.Process.Pid, rest, err)
			}
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	return r
}

// requireClean fails t when any child met any error, naming lock errors.
func (r run) requireClean(t *testing.T) {
	t.Helper()
	for _, rep := range r.reports {
		if rep.LockErrors > 0 {
			t.Errorf("child %d: %d lock errors", rep.PID, rep.LockErrors)
		}
		for i, e := range rep.Errors {
			if i == 10 {
				t.Errorf("child %d: … %d more errors", rep.PID, len(rep.Errors)-i)
				break
			}
			t.Errorf("child %d: %s", rep.PID, e)
		}
	}
}

// requireLeased fails t unless every child took the lease for at least
// minGrants writes and never lost a lease or had a commit fenced, and
// unless the lane passed from process to process.
func (r run) requireLeased(t *testing.T, minGrants int) {
	t.Helper()
	var grants, handoffs int64
	for _, rep := range r.reports {
		st := rep.Lease
		switch {
		case st == nil:
			t.Errorf("child %d reported no lease counters", rep.PID)
			continue
		case st.Grants < int64(minGrants):
			t.Errorf("child %d: %d lease grants, want at least %d (one per write)", rep.PID, st.Grants, minGrants)
		case st.Lost != 0 || st.Fenced != 0:
			t.Errorf("child %d: %d leases lost, %d commits fenced", rep.PID, st.Lost, st.Fenced)
		}
		grants += st.Grants
		handoffs += st.Handoffs
	}
	t.Logf("lease: %d grants, %d cross-process hand-offs", grants, handoffs)
	if handoffs == 0 {
		t.Errorf("no child handed the lane to a waiter: the writers never contended")
	}
}

// total sums an operation count over all children.
func (r run) total(op string) int {
	n := 0
	for _, rep := range r.reports {
		n += rep.Ops[op]
	}
	return n
}

// switches counts how often consecutive owners differ in owners (the
// writing process of each row in commit order): a.Procs-1 means the
// children wrote one after another, more means their writes interleaved.
func switches[T comparable](owners []T) int {
	n := 0
	for i := 1; i < len(owners); i++ {
		if owners[i] != owners[i-1] {
			n++
		}
	}
	return n
}

// requireInterleaved fails t unless the children's writes interleaved, so
// that the run did exercise concurrent writers.
func requireInterleaved[T comparable](t *testing.T, r run, owners []T) {
	t.Helper()
	if s := switches(owners); s < 2*r.args.Procs {
		t.Errorf("writes barely interleaved (%d owner switches over %d rows): the children did not write at once", s, len(owners))
	} else {
		t.Logf("%d procs × %d workers × %d iterations in %v; %d owner switches over %d rows",
			r.args.Procs, r.args.Workers, r.args.N, r.elapsed.Round(time.Millisecond), s, len(owners))
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
