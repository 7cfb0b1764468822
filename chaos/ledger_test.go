//go:build unix

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
)

var (
	flagDuration   = flag.Duration("chaos.duration", 0, "total nemesis time of the ledger run, split over its phases (default 30s, or $CLEOLEASE_CHAOS_DURATION)")
	flagWriters    = flag.Int("chaos.writers", 4, "writer processes")
	flagGoroutines = flag.Int("chaos.goroutines", 2, "writing goroutines per writer process")
	flagSeed       = flag.Uint64("chaos.seed", 0, "random seed (0: from the clock)")
	flagDir        = flag.String("chaos.dir", "", "keep the run's files in this directory instead of a temporary one")
	flagPhases     = flag.String("chaos.phases", "", "comma-separated subset of the phases to run (default all)")
)

// defaultDuration keeps the CI run (under -race, on 2 cores) near 30–45 s.
const defaultDuration = 30 * time.Second

var roles = map[string]func() int{}

func TestMain(m *testing.M) {
	if role := os.Getenv(envRole); role != "" {
		f, ok := roles[role]
		if !ok {
			fmt.Fprintln(os.Stderr, "unknown role", role)
			os.Exit(2)
		}
		os.Exit(f())
	}
	os.Exit(m.Run())
}

// phase is one configuration of the ledger, run on a fresh file.
type phase struct {
	name    string
	params  string // cleolease's DSN parameters beyond the common ones
	journal string // the journal mode the DSN sets in each base's dialect; "" for the default (WAL)
	ttl     time.Duration
}

var phases = []phase{
	// A paused holder is robbed after its TTL; back, it must be fenced.
	{"wal-steal", "_lease_ttl=300ms&_lease_steal_after_ttl=true&_lease_wait=3s", "", 300 * time.Millisecond},
	// A paused holder keeps the lane (waiters time out: ErrLeaseUnavailable)
	// until it resumes or the nemesis breaks the lane.
	{"wal-break", "_lease_ttl=300ms&_lease_wait=1500ms", "", 300 * time.Millisecond},
	// The rollback journal: readers and the writer block each other.
	{"delete-steal", "_lease_ttl=300ms&_lease_steal_after_ttl=true&_lease_wait=3s", "DELETE", 300 * time.Millisecond},
}

func chaosDuration(t *testing.T) time.Duration {
	if *flagDuration > 0 {
		return *flagDuration
	}
	if s := os.Getenv("CLEOLEASE_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CLEOLEASE_CHAOS_DURATION=%q: %v", s, err)
		}
		return d
	}
	return defaultDuration
}

// TestChaosLedger runs the chaos ledger (see the package documentation).
func TestChaosLedger(t *testing.T) {
	total := chaosDuration(t)
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	run := phases
	if *flagPhases != "" {
		run = nil
		for _, name := range strings.Split(*flagPhases, ",") {
			found := false
			for _, p := range phases {
				if p.name == name {
					run, found = append(run, p), true
				}
			}
			if !found {
				t.Fatalf("unknown phase %q", name)
			}
		}
	}
	dir := *flagDir
	if dir == "" {
		dir = testdir.New(t)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	faults, err := chaosFaults()
	if err != nil {
		t.Fatal(err)
	}
	bases, err := chaosBases(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d, %d writers × %d goroutines over %s, %s of nemesis over %d phases, faults %s, idle bound %s, wait bound %s, files in %s",
		seed, *flagWriters, *flagGoroutines, bases, total, len(run), faults, *flagIdleBound, *flagWaitBound, dir)
	var sum summary
	start := time.Now()
	for i, p := range run {
		t.Run(p.name, func(t *testing.T) {
			pdir := filepath.Join(dir, p.name)
			if err := os.MkdirAll(pdir, 0o755); err != nil {
				t.Fatal(err)
			}
			s := runPhase(t, p, pdir, faults, bases, total/time.Duration(len(run)), seed+uint64(i)*7919)
			sum.add(s)
		})
	}
	t.Logf("TOTAL %s in %s", sum.String(), time.Since(start).Round(time.Second))
}

// ---------------------------------------------------------------------------
// Writer processes.

// proc is one writer slot: the current incarnation of writer idx, restarted
// after every SIGKILL.
type proc struct {
	r    *ledgerRun
	idx  int
	base base   // the base its writer runs on
	log  string // ack log, shared by all incarnations

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   interface{ Close() error }
	stopped *exec.Cmd // the incarnation currently SIGSTOPped, if any
	stop    *stopRec  // its stop, ended at SIGCONT or SIGKILL
	starts  int

	// holderMu guards holder and holderCmd, apart from mu: kill holds mu
	// while cmd.Wait waits for the stdout copy, whose ackCounter.Write
	// records the holder id (under mu, the two waited for each other).
	holderMu  sync.Mutex
	holderCmd *exec.Cmd // the incarnation holder belongs to
	holder    string    // its holder id, once it printed it

	acks     atomic.Int64 // acknowledgements seen on stdout, all incarnations
	progress chan struct{}
}

// pid is the current incarnation's pid.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// holderID is the current incarnation's holder id ("" until it printed
// it).
func (p *proc) holderID() string {
	p.holderMu.Lock()
	defer p.holderMu.Unlock()
	return p.holder
}

// ackCounter counts the "A" lines a writer prints after each fsynced ack,
// and learns the holder id from its "H" line.
type ackCounter struct {
	p    *proc
	cmd  *exec.Cmd // the incarnation whose stdout this is
	part []byte
}

func (a *ackCounter) Write(b []byte) (int, error) {
	a.part = append(a.part, b...)
	for {
		i := bytes.IndexByte(a.part, '\n')
		if i < 0 {
			break
		}
		line := string(a.part[:i])
		if line == "A" {
			a.p.acks.Add(1)
			select {
			case a.p.progress <- struct{}{}:
			default:
			}
		}
		if id, ok := strings.CutPrefix(line, "H "); ok {
			a.p.holderMu.Lock()
			if a.p.holderCmd == a.cmd {
				a.p.holder = id
			}
			a.p.holderMu.Unlock()
		}
		a.part = a.part[i+1:]
	}
	return len(b), nil
}

// start runs a new incarnation; the caller holds p.mu.
func (p *proc) start() error {
	p.starts++
	cmd := p.base.command()
	cmd.Env = append(os.Environ(),
		envRole+"=writer",
		envDSN+"="+ledgerDSN(p.r.path, p.r.ph, p.base),
		envWriter+"="+strconv.Itoa(p.idx),
		envGoroutines+"="+strconv.Itoa(*flagGoroutines),
		envLog+"="+p.log,
		envSeed+"="+strconv.FormatUint(p.r.seed+uint64(p.idx)*1_000_003+uint64(p.starts), 10),
	)
	if p.r.faults["giveup"] {
		cmd.Env = append(cmd.Env, envGiveUp+"=1")
	}
	errf, err := os.OpenFile(p.log+".stderr", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer errf.Close()
	cmd.Stderr = errf
	cmd.Stdout = &ackCounter{p: p, cmd: cmd}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	p.holderMu.Lock()
	p.holderCmd, p.holder = cmd, "" // (before its stdout can say it)
	p.holderMu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd, p.stdin = cmd, in
	return nil
}

// kill SIGKILLs the current incarnation, reaps it and starts the next. The
// time it was reaped ends its open operations (and its stop, if stopped).
func (p *proc) kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	p.cmd.Wait()
	at := now()
	p.r.reaped(int64(p.cmd.Process.Pid), at)
	if p.stop != nil {
		p.r.stopEnded(p.stop, at)
		p.stop = nil
	}
	p.stopped = nil
	return p.start()
}

// pause SIGSTOPs the current incarnation for d, then SIGCONTs it (unless it
// was killed meanwhile), recording the stop. It reports false when the
// writer was already stopped.
func (p *proc) pause(d time.Duration, kind string) bool {
	p.mu.Lock()
	if p.stopped != nil {
		p.mu.Unlock()
		return false
	}
	cmd := p.cmd
	if cmd.Process.Signal(syscall.SIGSTOP) != nil {
		p.mu.Unlock()
		return false
	}
	p.stopped = cmd
	p.stop = p.r.stopStarted(p.idx, int64(cmd.Process.Pid), now(), kind, d)
	p.mu.Unlock()
	time.Sleep(d) // the nemesis' pacing: how long the writer stays frozen
	p.mu.Lock()
	if p.stopped == cmd {
		p.r.stopEnded(p.stop, now())
		cmd.Process.Signal(syscall.SIGCONT)
		p.stopped, p.stop = nil, nil
	}
	p.mu.Unlock()
	return true
}

// ---------------------------------------------------------------------------
// One phase.

type ledgerRun struct {
	t      *testing.T
	ph     phase
	dir    string
	path   string
	dsn    string
	seed   uint64
	faults faultSet
	start  int64   // when the phase started (now())
	db     *sql.DB // the test's own cleolease handle: schema, cleolease.Break
	procs  []*proc
	mon    *rowMonitor

	evMu   sync.Mutex
	events map[string]int
	notes  []note          // what the nemesis did, when
	stops  []*stopRec      // every SIGSTOP, until its SIGCONT or SIGKILL
	ends   map[int64]int64 // pid → when a killed writer was reaped
	odd    []string        // unexpected nemesis errors
}

// note is one thing the nemesis did (or saw), for the idle check's report.
type note struct {
	at   int64
	text string
}

// note records an event of kind at, counted in the summary, and its detail.
func (r *ledgerRun) note(at int64, kind, detail string) {
	r.evMu.Lock()
	r.events[kind]++
	r.notes = append(r.notes, note{at, strings.TrimSpace(kind + " " + detail)})
	r.evMu.Unlock()
}

// logNote records what happened at, without counting it.
func (r *ledgerRun) logNote(at int64, text string) {
	r.evMu.Lock()
	r.notes = append(r.notes, note{at, text})
	r.evMu.Unlock()
}

// count adds n to the summary's count of kind.
func (r *ledgerRun) count(kind string, n int) {
	r.evMu.Lock()
	r.events[kind] += n
	r.evMu.Unlock()
}

// stopStarted records that writer idx (pid) was SIGSTOPped at for d.
func (r *ledgerRun) stopStarted(idx int, pid, at int64, kind string, d time.Duration) *stopRec {
	s := &stopRec{writer: idx, pid: pid, from: at, to: -1}
	r.evMu.Lock()
	r.stops = append(r.stops, s)
	r.evMu.Unlock()
	r.note(at, kind, fmt.Sprintf("w%d pid %d for %s", idx, pid, d.Round(time.Millisecond)))
	return s
}

// stoppedPIDs lists the writers stopped now (a SIGSTOP without its SIGCONT
// or SIGKILL yet).
func (r *ledgerRun) stoppedPIDs() []int64 {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	var pids []int64
	for _, s := range r.stops {
		if s.to < 0 {
			pids = append(pids, s.pid)
		}
	}
	return pids
}

// stopEnded records that the stop s ended at (SIGCONT, or SIGKILL).
func (r *ledgerRun) stopEnded(s *stopRec, at int64) {
	r.evMu.Lock()
	s.to = at
	r.evMu.Unlock()
	r.logNote(at, fmt.Sprintf("cont w%d pid %d", s.writer, s.pid))
}

// reaped records that a killed writer pid was reaped at.
func (r *ledgerRun) reaped(pid, at int64) {
	r.evMu.Lock()
	r.ends[pid] = at
	r.evMu.Unlock()
}

// whoHolder names the writer whose holder id is id, as far as known.
func (r *ledgerRun) whoHolder(id string) string {
	for _, p := range r.procs {
		if p.holderID() == id {
			return fmt.Sprintf("w%d", p.idx)
		}
	}
	return "(" + id + ")"
}

func (r *ledgerRun) oddity(format string, args ...any) {
	r.evMu.Lock()
	r.odd = append(r.odd, fmt.Sprintf(format, args...))
	r.evMu.Unlock()
}

func runPhase(t *testing.T, ph phase, dir string, faults faultSet, bases baseSet, d time.Duration, seed uint64) summary {
	path := filepath.Join(dir, "ledger.db")
	r := &ledgerRun{
		t: t, ph: ph, dir: dir, path: path, seed: seed, faults: faults, start: now(),
		dsn:    ledgerDSN(path, ph, goSQLite3),
		events: map[string]int{},
		ends:   map[int64]int64{},
	}
	db, err := sql.Open("cleolease", r.dsn)
	if err != nil {
		t.Fatal(err)
	}
	r.db = db
	defer db.Close()
	if _, err := db.Exec(ledgerSchema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	r.mon = startMonitor(t, path, ph.journal, r.stoppedPIDs)
	defer r.mon.close()
	for i := range *flagWriters {
		p := &proc{r: r, idx: i, base: bases.of(i), log: filepath.Join(dir, fmt.Sprintf("writer%d.log", i)), progress: make(chan struct{}, 1)}
		p.mu.Lock()
		err := p.start()
		p.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		r.procs = append(r.procs, p)
	}
	t.Cleanup(func() {
		for _, p := range r.procs {
			p.mu.Lock()
			if p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
			}
			p.mu.Unlock()
		}
	})
	started := time.Now()

	r.nemesis(d, rand.New(rand.NewPCG(seed, 0xc4a05)))

	// Calm: with the nemesis gone, every writer must make progress again.
	// The bound is generous; missing it means a writer is stuck (deadlock)
	// or starved (the wait check then says so).
	if lagging := r.awaitProgress(3, 2*time.Minute); len(lagging) > 0 {
		r.dumpStacks()
		t.Errorf("no progress after the nemesis stopped: writers %v acknowledged fewer than 3 entries in 2m: stuck or starved (stacks in %s/*.stderr; the wait check below tells starved from stuck)", lagging, dir)
	}
	// Shut the writers down cleanly (stdin closed); they must exit.
	done := make(chan struct{})
	for _, p := range r.procs {
		p.stdin.Close()
	}
	go func() {
		for _, p := range r.procs {
			if err := p.cmd.Wait(); err != nil {
				r.oddity("writer %d did not exit cleanly: %v", p.idx, err)
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		r.dumpStacks()
		<-done
		t.Errorf("writers did not exit after stdin closed: stuck (stacks in %s/*.stderr)", dir)
	}
	db.Close()
	samples, perr := r.mon.close()
	if perr != nil {
		r.oddity("monitor: the write-lock probe: %v", perr)
	}
	s := r.check(samples)
	s.wall = time.Since(started)
	t.Logf("%s: %s", ph.name, s.String())
	return s
}

// nemesis injects the enabled faults at random for d (see nemesisFaults).
func (r *ledgerRun) nemesis(d time.Duration, rng *rand.Rand) {
	var pauses sync.WaitGroup
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		// Pacing: 20–300 ms between faults.
		time.Sleep(20*time.Millisecond + time.Duration(rng.Int64N(int64(280*time.Millisecond))))
		p := r.procs[rng.IntN(len(r.procs))]
		switch r.faults.pickAction(rng) {
		case "kill":
			at, old := now(), p.pid()
			if err := p.kill(); err != nil {
				r.oddity("kill/restart writer %d: %v", p.idx, err)
				continue
			}
			r.note(at, "kill", fmt.Sprintf("w%d pid %d, restarted as pid %d", p.idx, old, p.pid()))
		case "stop":
			// Pauses: mostly below the TTL, a third up to 4×TTL, a few
			// up to 2 s.
			var pd time.Duration
			switch rng.IntN(6) {
			case 0, 1, 2:
				pd = time.Duration(rng.Int64N(int64(r.ph.ttl)))
			case 3, 4:
				pd = r.ph.ttl + time.Duration(rng.Int64N(int64(3*r.ph.ttl)))
			default:
				pd = time.Duration(rng.Int64N(int64(2 * time.Second)))
			}
			kind := "stop<ttl"
			if pd > r.ph.ttl {
				kind = "stop>ttl"
			}
			pauses.Add(1)
			go func() {
				defer pauses.Done()
				p.pause(pd, kind)
			}()
		case "break-api":
			r.breakAPI()
		case "break-engine":
			r.breakEngine()
		case "sidecar":
			r.removeSidecar(rng)
		case "flood":
			r.flood(rng, &pauses)
		}
	}
	pauses.Wait()
}

// breakAPI breaks the lane with cleolease.Break on the test's handle.
func (r *ledgerRun) breakAPI() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	at := now()
	h, err := cleolease.Break(ctx, r.db, ledgerScope, ledgerLane, true)
	switch {
	case err != nil && classify(ctx, err) == classCtx:
		// A frozen writer holding SQLite's write lock blocks the break.
		r.note(at, "break-api:timeout", "")
	case err != nil:
		r.oddity("cleolease.Break: %v", err)
	case h == nil:
		r.note(at, "break-api:free", "")
	default:
		r.note(at, "break-api", fmt.Sprintf("broke pid %d epoch %d (done %s)", h.PID, h.Epoch, relTime(now(), r.start)))
	}
}

// breakEngine breaks the lane from a separate process, through an engine of
// its own (lease.Open + Engine.Break).
func (r *ledgerRun) breakEngine() {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=breaker", envPath+"="+r.path)
	at := now()
	out, err := cmd.Output()
	line := strings.TrimSpace(string(out))
	switch {
	case err != nil:
		r.oddity("breaker process: %v (%s)", err, line)
	case line == "B free":
		r.note(at, "break-engine:free", "")
	case strings.HasPrefix(line, "B "):
		r.note(at, "break-engine", fmt.Sprintf("%s (done %s)", line, relTime(now(), r.start)))
	case strings.HasPrefix(line, "E "+classCtx+" "):
		r.note(at, "break-engine:timeout", "")
	default:
		r.oddity("breaker process: %s", line)
	}
}

// awaitProgress waits until every writer acknowledged n more entries. It
// gives up after limit (a generous liveness bound, not a timing claim) and
// returns the writers that did not.
func (r *ledgerRun) awaitProgress(n int64, limit time.Duration) (lagging []int) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	targets := make([]int64, len(r.procs))
	for i, p := range r.procs {
		targets[i] = p.acks.Load() + n
	}
	for i, p := range r.procs {
		for p.acks.Load() < targets[i] {
			select {
			case <-p.progress:
			case <-deadline.C:
				for j, q := range r.procs {
					if q.acks.Load() < targets[j] {
						lagging = append(lagging, q.idx)
					}
				}
				return lagging
			}
		}
	}
	return nil
}

// dumpStacks makes every live writer print its goroutines to its stderr
// file (SIGQUIT), for a stuck run.
func (r *ledgerRun) dumpStacks() {
	// The nemesis has stopped: nothing replaces p.cmd any more.
	for _, p := range r.procs {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Signal(syscall.SIGQUIT)
	}
}

// ---------------------------------------------------------------------------
// The check.

type summary struct {
	entries, acked, ambiguous int64
	epochs, maxEpoch          int64
	issued                    int64 // epochs issued from the first entry's on (a lane's first epoch is the clock floor)
	starts                    int
	events, errors, modes     map[string]int
	vkinds                    map[string]int // violations by kind
	stats                     lease.Stats
	violations                int
	wall                      time.Duration
	idleLongest               time.Duration // the idle check's longest idle wait
	idleExcluded              time.Duration // the time it excluded (a stopped process held the row or SQLite's write lock)
	idleLocked                time.Duration // the part of it a stopped process held SQLite's write lock
	waitLongest               time.Duration // the wait check's longest wait of one operation
	waitBlocked               time.Duration // the time it excluded (a stopped process held the row or a hold)
}

func (s *summary) add(o summary) {
	s.entries += o.entries
	s.acked += o.acked
	s.ambiguous += o.ambiguous
	s.epochs += o.epochs
	s.maxEpoch = max(s.maxEpoch, o.maxEpoch)
	s.issued += o.issued
	s.starts += o.starts
	s.violations += o.violations
	s.wall += o.wall
	s.idleLongest = max(s.idleLongest, o.idleLongest)
	s.idleExcluded += o.idleExcluded
	s.idleLocked += o.idleLocked
	s.waitLongest = max(s.waitLongest, o.waitLongest)
	s.waitBlocked += o.waitBlocked
	for _, m := range []struct {
		dst *map[string]int
		src map[string]int
	}{{&s.events, o.events}, {&s.errors, o.errors}, {&s.modes, o.modes}, {&s.vkinds, o.vkinds}} {
		if *m.dst == nil {
			*m.dst = map[string]int{}
		}
		for k, v := range m.src {
			(*m.dst)[k] += v
		}
	}
	addStats(&s.stats, o.stats)
}

func addStats(dst *lease.Stats, src lease.Stats) {
	dst.Grants += src.Grants
	dst.Claims += src.Claims
	dst.Handoffs += src.Handoffs
	dst.Lost += src.Lost
	dst.Fenced += src.Fenced
	dst.Unavailable += src.Unavailable
	dst.ReclaimDead += src.ReclaimDead
	dst.ReclaimTTL += src.ReclaimTTL
	dst.DeadWaiters += src.DeadWaiters
	dst.Breaks += src.Breaks
}

func kv(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

func (s summary) String() string {
	return fmt.Sprintf("entries=%d acked=%d committed-unacked-after-ambiguous-error=%d | lease transitions: epochs with entries=%d, epochs issued since the first entry's=%d | writer starts=%d | nemesis: %s | writer errors: %s | modes: %s | engine stats of cleanly exited writers: grants=%d claims=%d handoffs=%d lost=%d fenced=%d unavailable=%d reclaim-dead=%d reclaim-ttl=%d dead-waiters=%d | idle lane: longest wait %s (bound %s), excluded %s (a stopped process's row, or for %s its write lock) | waits: longest %s (bound %s), blocked %s (a stopped process's row or hold) | violations=%d %s | %s",
		s.entries, s.acked, s.ambiguous, s.epochs, s.issued, s.starts, kv(s.events), kv(s.errors), kv(s.modes),
		s.stats.Grants, s.stats.Claims, s.stats.Handoffs, s.stats.Lost, s.stats.Fenced, s.stats.Unavailable,
		s.stats.ReclaimDead, s.stats.ReclaimTTL, s.stats.DeadWaiters,
		s.idleLongest.Round(time.Millisecond), *flagIdleBound, s.idleExcluded.Round(time.Millisecond), s.idleLocked.Round(time.Millisecond),
		s.waitLongest.Round(time.Millisecond), *flagWaitBound, s.waitBlocked.Round(time.Millisecond),
		s.violations, kv(s.vkinds), s.wall.Round(time.Second))
}

type ledgerRow struct {
	id, seq          int64
	stream           string
	n                int64
	uid              string
	pid, epoch       int64
	rowEpoch, rowPid sql.NullInt64
	mode             string
}

type ack struct {
	uid   string
	epoch int64
	mode  string
	log   string
}

// check reads the file and the ack logs after the writers exited and
// reports every violation; samples are the monitor's (the idle check).
func (r *ledgerRun) check(samples []rowSample) summary {
	t := r.t
	s := summary{events: r.events, errors: map[string]int{}, modes: map[string]int{}, vkinds: map[string]int{}}
	violate := func(kind, format string, args ...any) {
		s.violations++
		s.vkinds[kind]++
		if s.violations <= 40 {
			t.Errorf(format, args...)
		}
	}
	for _, o := range r.odd {
		violate("nemesis-error", "nemesis: %s", o)
	}
	raw, err := sql.Open("sqlite3", "file:"+r.path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	var ic string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&ic); err != nil || ic != "ok" {
		violate("integrity", "PRAGMA integrity_check = %q, %v", ic, err)
	}

	rows, err := raw.Query(`SELECT id, seq, stream, n, uid, pid, epoch, row_epoch, row_pid, mode FROM ledger ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var ledger []ledgerRow
	for rows.Next() {
		var e ledgerRow
		if err := rows.Scan(&e.id, &e.seq, &e.stream, &e.n, &e.uid, &e.pid, &e.epoch, &e.rowEpoch, &e.rowPid, &e.mode); err != nil {
			t.Fatal(err)
		}
		ledger = append(ledger, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	s.entries = int64(len(ledger))

	byUID := map[string][]int{}
	lastN := map[string]int64{}
	epochPid := map[int64]int64{}
	var prevEpoch int64
	for i, e := range ledger {
		s.modes[e.mode]++
		byUID[e.uid] = append(byUID[e.uid], i)
		if e.seq != int64(i)+1 {
			violate("seq-gap", "entry id %d (%s): seq %d, want %d (gap or repeat in commit order)", e.id, e.uid, e.seq, i+1)
		}
		if e.n != lastN[e.stream]+1 {
			violate("stream-gap", "entry id %d: %s follows %s-%d in commit order (stream not consecutive)", e.id, e.uid, e.stream, lastN[e.stream])
		}
		lastN[e.stream] = e.n
		if e.epoch <= 0 {
			violate("no-lease", "entry id %d (%s, %s, pid %d): committed with no active lease (epoch %d)", e.id, e.uid, e.mode, e.pid, e.epoch)
		}
		if e.epoch < prevEpoch {
			violate("epoch-backwards", "entry id %d (%s, %s, pid %d): epoch %d after epoch %d: committed under a superseded epoch", e.id, e.uid, e.mode, e.pid, e.epoch, prevEpoch)
		}
		prevEpoch = max(prevEpoch, e.epoch)
		if !e.rowEpoch.Valid || e.rowEpoch.Int64 != e.epoch || !e.rowPid.Valid || e.rowPid.Int64 != e.pid {
			violate("not-active-epoch", "entry id %d (%s, %s, pid %d, epoch %d): the active lease row at the write was epoch %v pid %v",
				e.id, e.uid, e.mode, e.pid, e.epoch, e.rowEpoch, e.rowPid)
		}
		if p, ok := epochPid[e.epoch]; ok && p != e.pid {
			violate("epoch-two-pids", "epoch %d has entries of pids %d and %d", e.epoch, p, e.pid)
		}
		epochPid[e.epoch] = e.pid
	}
	s.epochs = int64(len(epochPid))
	for uid, is := range byUID {
		if len(is) > 1 {
			violate("duplicate", "uid %s committed %d times (ids %v)", uid, len(is), is)
		}
	}

	var active int
	if err := raw.QueryRow(`SELECT coalesce(max(epoch), 0), count(*) FILTER (WHERE active = 1) FROM _writer_leases WHERE scope = ? AND lane = ?`,
		ledgerScope, ledgerLane).Scan(&s.maxEpoch, &active); err != nil {
		violate("lease-table", "reading _writer_leases: %v", err)
	}
	if len(ledger) > 0 && s.maxEpoch >= ledger[0].epoch {
		s.issued = s.maxEpoch - ledger[0].epoch + 1
	}
	if prevEpoch > s.maxEpoch {
		violate("epoch-unissued", "entries carry epoch %d, above the highest epoch ever issued %d", prevEpoch, s.maxEpoch)
	}
	if active > 1 {
		violate("two-active", "%d active rows for the lane", active)
	}

	// The writers' logs: acknowledgements, errors and operations.
	idle := idleInput{samples: samples, ends: r.ends, end: now()}
	var quiets []stopRec
	for _, st := range r.stops {
		x := *st
		if x.to < 0 {
			x.to = idle.end
		}
		idle.stops = append(idle.stops, x)
	}
	for _, p := range r.procs {
		s.starts += p.starts
		wl := readLog(t, p.log, p.idx)
		acks, errs := wl.acks, wl.errs
		s.ambiguous += wl.ambiguous
		addStats(&s.stats, wl.stats)
		idle.ops = append(idle.ops, wl.ops...)
		quiets = append(quiets, wl.quiets...)
		for _, a := range acks {
			s.acked++
			is := byUID[a.uid]
			switch {
			case len(is) == 0:
				violate("lost-ack", "acknowledged entry %s (epoch %d, %s) is missing from the ledger", a.uid, a.epoch, a.mode)
			case (a.epoch != -2 && ledger[is[0]].epoch != a.epoch) || ledger[is[0]].mode != a.mode:
				violate("ack-mismatch", "acknowledged entry %s (epoch %d, %s) is in the ledger as epoch %d, %s", a.uid, a.epoch, a.mode, ledger[is[0]].epoch, ledger[is[0]].mode)
			}
		}
		for _, e := range errs {
			s.errors[e.class]++
			if !allowedClass[e.class] {
				violate("error-"+e.class, "writer %d saw a %s error in %s: %s", p.idx, e.class, e.op, e.msg)
			}
		}
		if b, err := os.ReadFile(p.log + ".stderr"); err == nil {
			for _, bad := range []string{"DATA RACE", "panic:", "fatal error:"} {
				if bytes.Contains(b, []byte(bad)) {
					violate("writer-crash", "writer %d stderr has %q (see %s.stderr)", p.idx, bad, p.log)
				}
			}
		}
	}

	// The giveup fault's operations, and the idle lane.
	if r.faults["giveup"] {
		s.events["giveup:quiet"] += len(quiets)
	}
	for _, o := range idle.ops {
		if o.giveUp {
			s.events["giveup"]++
			if o.g == 0 && o.x > 0 {
				s.events["giveup:gave-up"]++
			}
		}
	}
	res := analyzeIdle(idle)
	s.idleLongest, s.idleExcluded, s.idleLocked = res.longest.len(), res.excluded.total(), res.locked.total()
	s.waitLongest, s.waitBlocked = res.longestWait, res.blocked.total()
	explained := 0
	for _, run := range res.idle {
		if run.len() > *flagIdleBound {
			// The first few in detail: each explanation is long.
			if explained++; explained <= 3 {
				violate("idle-lane", "%s", r.explainIdle(run, idle, quiets))
			} else {
				violate("idle-lane", "idle lane: live writers waited %s from %s to %s while no process held the lane",
					run.len().Round(time.Millisecond), relTime(run.from, r.start), relTime(run.to, r.start))
			}
		}
	}
	explained = 0
	for i, d := range res.waits {
		if d <= *flagWaitBound {
			continue
		}
		o := idle.ops[i]
		if explained++; explained <= 3 {
			violate("starved", "%s", r.explainWait(o, d, idle, res))
		} else {
			violate("starved", "starved: w%d pid %d op %s (%s) waited %s from %s", o.writer, o.pid, o.id, o.mode,
				d.Round(time.Millisecond), relTime(o.w, r.start))
		}
	}
	return s
}

// explainWait describes an operation that waited too long: how, who held
// the lane meanwhile, and what the nemesis did.
func (r *ledgerRun) explainWait(o opRec, d time.Duration, in idleInput, res idleResult) string {
	w := in.waitSpan(o)
	end := "gave up"
	if o.g > 0 {
		end = "then granted"
	} else if o.x == 0 {
		end = "never ended"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "starved: w%d pid %d op %s (%s) waited %s (bound %s) with no stopped process blocking the lane, within %s–%s (phase clock), %s",
		o.writer, o.pid, o.id, o.mode, d.Round(time.Millisecond), *flagWaitBound, relTime(w.from, r.start), relTime(w.to, r.start), end)
	grants := map[string]int{}
	for _, x := range in.ops {
		if x.g > w.from && x.g < w.to {
			grants[fmt.Sprintf("w%d pid %d", x.writer, x.pid)]++
		}
	}
	fmt.Fprintf(&b, "\n\tgranted meanwhile (operations): %s", kv(grants))
	fmt.Fprintf(&b, "\n\tidle within it: %s", res.idle.minus(spanSet{{0, w.from}}).minus(spanSet{{w.to, 1 << 62}}).total().Round(time.Millisecond))
	b.WriteString(r.nemesisAround(w))
	return b.String()
}

// explainIdle describes an idle run: who waited, who held the row, who was
// stopped, and what the nemesis did from 2 s before it to its end.
func (r *ledgerRun) explainIdle(run span, in idleInput, quiets []stopRec) string {
	who := map[int64]string{int64(os.Getpid()): "the test process"}
	for _, o := range in.ops {
		who[o.pid] = fmt.Sprintf("w%d pid %d", o.writer, o.pid)
	}
	name := func(pid int64) string {
		n, ok := who[pid]
		if !ok {
			n = fmt.Sprintf("pid %d", pid)
		}
		if e, ok := in.ends[pid]; ok && e <= run.to {
			n += fmt.Sprintf(" (killed, reaped %s)", relTime(e, r.start))
		}
		return n
	}
	var b strings.Builder
	fmt.Fprintf(&b, "idle lane: live writers waited %s (bound %s) while no process held the lane, from %s to %s (phase clock)",
		run.len().Round(time.Millisecond), *flagIdleBound, relTime(run.from, r.start), relTime(run.to, r.start))
	b.WriteString("\n\twaiting:")
	n := 0
	for _, o := range in.ops {
		w := in.waitSpan(o)
		if o.w == 0 || w.from >= run.to || w.to <= run.from {
			continue
		}
		if n++; n > 12 {
			b.WriteString(" …")
			break
		}
		end := "gave up"
		if o.g > 0 {
			end = "granted"
		} else if o.x == 0 {
			end = "never ended"
		}
		gu := ""
		if o.giveUp {
			gu = " giveup"
		}
		fmt.Fprintf(&b, " %s op %s (%s%s) %s–%s %s;", name(o.pid), o.id, o.mode, gu, relTime(w.from, r.start), relTime(w.to, r.start), end)
	}
	b.WriteString("\n\tlease row (monitor):")
	b.WriteString(compressSamples(in.samples, run, r.start, func(pid int64) string {
		held := ""
		for _, o := range in.ops {
			if h, ok := in.heldSpan(o); ok && o.pid == pid && h.from < run.to && h.to > run.from {
				held = " (in a hold at times)"
			}
		}
		return name(pid) + held
	}))
	b.WriteString("\n\tSQLite's write lock (probe):")
	b.WriteString(compressLocks(in.samples, run, r.start, name))
	for _, x := range []struct {
		what  string
		spans []stopRec
	}{{"stopped", in.stops}, {"quiet (giveup think time)", quiets}} {
		fmt.Fprintf(&b, "\n\t%s:", x.what)
		for _, st := range x.spans {
			if st.from < run.to && st.to > run.from-2*int64(time.Second/time.Microsecond) {
				fmt.Fprintf(&b, " %s %s–%s;", name(st.pid), relTime(st.from, r.start), relTime(st.to, r.start))
			}
		}
	}
	b.WriteString(r.nemesisAround(run))
	return b.String()
}

// nemesisAround lists what the nemesis did from 2 s before s to its end.
func (r *ledgerRun) nemesisAround(s span) string {
	r.evMu.Lock()
	notes := slices.Clone(r.notes)
	r.evMu.Unlock()
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].at < notes[j].at })
	var in []note
	for _, x := range notes {
		if x.at >= s.from-2*int64(time.Second/time.Microsecond) && x.at < s.to {
			in = append(in, x)
		}
	}
	var b strings.Builder
	b.WriteString("\n\tnemesis (from 2s before):")
	const most = 24 // the first and last 12
	for i, x := range in {
		if len(in) > most && i == most/2 {
			fmt.Fprintf(&b, "\n\t\t… %d more", len(in)-most)
		}
		if len(in) > most && i >= most/2 && i < len(in)-most/2 {
			continue
		}
		fmt.Fprintf(&b, "\n\t\t%s %s", relTime(x.at, r.start), x.text)
	}
	return b.String()
}

type logErr struct{ class, op, msg string }

// writerLog is what a writer slot's ack log says, over all its
// incarnations.
type writerLog struct {
	acks      []ack
	errs      []logErr
	ambiguous int64
	stats     lease.Stats
	ops       []opRec
	quiets    []stopRec // the giveup fault's think times (goQuiet)
}

// readLog parses the ack log of writer idx. A line without its newline (a
// write cut by SIGKILL) is ignored: it was never acknowledged.
func readLog(t *testing.T, path string, idx int) (wl writerLog) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var pid int64
	ops := map[string]int{} // the current incarnation's operations, by id
	for sc.Scan() {
		line := sc.Text()
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "A":
			f := strings.Fields(rest)
			if len(f) != 3 {
				t.Errorf("%s: bad ack line %q", path, line)
				continue
			}
			ep, _ := strconv.ParseInt(f[1], 10, 64)
			wl.acks = append(wl.acks, ack{uid: f[0], epoch: ep, mode: f[2], log: path})
		case "E":
			f := strings.SplitN(rest, " ", 3)
			if len(f) != 3 {
				t.Errorf("%s: bad error line %q", path, line)
				continue
			}
			msg, err := strconv.Unquote(f[2])
			if err != nil {
				msg = f[2]
			}
			wl.errs = append(wl.errs, logErr{class: f[0], op: f[1], msg: msg})
		case "M":
			wl.ambiguous++
		case "S":
			var st lease.Stats
			if err := json.Unmarshal([]byte(rest), &st); err == nil {
				addStats(&wl.stats, st)
			}
		case "P":
			pid, _ = strconv.ParseInt(rest, 10, 64)
			clear(ops)
		case "H":
		case "Q":
			f := strings.Fields(rest)
			if len(f) != 2 {
				t.Errorf("%s: bad quiet line %q", path, line)
				continue
			}
			from, _ := strconv.ParseInt(f[0], 10, 64)
			to, _ := strconv.ParseInt(f[1], 10, 64)
			wl.quiets = append(wl.quiets, stopRec{writer: idx, pid: pid, from: from, to: to})
		case "W":
			f := strings.Fields(rest)
			if len(f) != 4 {
				t.Errorf("%s: bad op line %q", path, line)
				continue
			}
			at, _ := strconv.ParseInt(f[1], 10, 64)
			ops[f[0]] = len(wl.ops)
			wl.ops = append(wl.ops, opRec{writer: idx, pid: pid, id: f[0], mode: f[2], giveUp: f[3] == "1", w: at})
		case "G", "R", "X":
			f := strings.Fields(rest)
			i, ok := ops[f[0]]
			if len(f) != 2 || !ok {
				t.Errorf("%s: bad op line %q", path, line)
				continue
			}
			at, _ := strconv.ParseInt(f[1], 10, 64)
			o := &wl.ops[i]
			switch kind {
			case "G":
				o.g = at
			case "R":
				o.r = at
			default:
				o.x = at
			}
		default:
			t.Errorf("%s: unknown line %q", path, line)
		}
	}
	return wl
}
