package lease

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/testdir"
)

// The deterministic simulation (issue 24, "Safety first"; issue 28, "The
// instruments that missed them"). Several real Engines — each with its
// own holder id, liveness locks, doorbell and clock (osSeams,
// sim_os_test.go) — share one SQLite file in one test process, inside a
// synctest bubble (so every timer, back-off and TTL runs on the bubble's
// fake clock). Every step an engine takes into its OS seams and every
// lease statement (the fault hook) parks at a gate; after the bubble is
// idle the scheduler, driven by a seeded generator, picks one thing to
// happen:
//   - a parked step goes on, sometimes with SQLITE_BUSY or an I/O error
//     injected into a lease statement, or with a liveness probe that
//     cannot test the lock (Unknown);
//   - a datagram in flight (a grant, a registration, a request to look)
//     is delivered — any of them, a later one before an earlier one —,
//     lost, duplicated or held back while other steps run and time
//     passes; a datagram is forged (a grant nobody made, a registration
//     in another process's name, a replay); a process's receive loop
//     fails once (its next Recv returns an error);
//   - a process is killed (its locks and socket go, every later step of
//     it fails, the exit watches on it ring) or later restarted under a
//     new identity, stopped and resumed (its steps held back while time
//     passes its TTL);
//   - the Acquire in progress of a process is cancelled (its caller's
//     context ends), wherever its claim is parked — at the claim
//     transaction, while it registers, awaits, or quits — and most often
//     while a hand-off that found it waiting is about to commit; a worker
//     whose Acquire failed may give up for a while;
//   - the sidecar is replaced: processes opened from then on lock a new
//     generation of it, where their want bytes, lifetime locks and
//     tickets are; the engines that follow it (platform.Follower) move —
//     at a lease use or a registration naming the new generation, or at
//     a heartbeat, never on the file watch's report alone
//     (sidecarfollow.go);
//   - the file is backed up (VACUUM INTO), or the last backup is restored
//     over it in place with SQLite's backup API while the processes keep
//     it open (issue 31: old lease rows and epochs come back, naming
//     processes that may live; refused while one holds a lock on the
//     file);
//   - a lane is broken (Break, forced), a process's wall clock is
//     stepped, or time passes — until the first timer wakes a process
//     that can take a step (simOS.sleep).
//
// Each process's worker writes under its Hold through the real entry
// points: Acquire, FenceBegin, Fencing.Check, COMMIT, Committed, Release;
// some in a tight loop (busy), some with long transactions (slow). Some
// processes run in another pid namespace (their holder_start says so),
// and the pid path of a probe (lookupProcess) answers from the simulated
// world.
//
// After every step it checks, reading the file, safety:
//   - every committed write carries the (holder, epoch) that was the
//     lane's active row when it committed (read inside the committing
//     transaction, after the fencing check, just before COMMIT);
//   - committed writes never go back in epoch, and no epoch is written by
//     two holders;
//   - the active row's epoch only grows — from the row a restore brought
//     back, which may be older; a grant made after a restore exceeds
//     every epoch issued before it, wherever the clocks of the processes
//     that may have made it all read above them (the floor's bound: the
//     simulation steps clocks, and its time stands still between sleeps,
//     so that epochs run ahead of it), or it is a hand-off (epoch + 1)
//     of a grant accepted so;
//   - at most one live process holds a grant that matches the active row
//     (can commit);
//
// and liveness (sim_live_test.go, which defines each precisely with what
// it excuses: stopped processes, SQLite's write lock held by one, the TTL
// rule):
//   - no lane stays wanted by a live process and held by none for more
//     than simStuckBound of simulated time (stuck lane);
//   - the row never names, for more than simUnawareBound, a live process
//     that neither holds nor claims the lane (unaware holder: a grant its
//     claim never learned of);
//   - no process waits inside Acquire for more than simStarveBound while
//     others hold the lane (starved);
//   - no lane is reclaimed as dead from a process that lives (robbed).
//
// And it counts, for issue 24 item 3, the data transactions in which the
// lane's row at COMMIT differed from the row read right after BEGIN
// IMMEDIATE (rowMoved): a change only the transaction itself could make.
//
// The seeded reverts each have their test (sim_bug_test.go), which puts
// the hole back in the simulated engines (simConfig.holes, the engine's
// holes), with a configuration that reaches it (simLateGrant,
// simSidecar, simPidns for issue 28's; simFencing for issue 24's).
// On c2e842a, before the fixes, TestSimulation's own configuration found
// the live holder of another pid namespace robbed in every seed it was
// run with (within 5,500 steps) and the grant forgotten in some.
//
// Not simulated: the root driver (write.go; the worker calls the Hold API
// the way write.go does), several writers of one process (the in-process
// gate), more than one lane, the file watch (inotify: exits are told by
// exit watches instead, and the sidecar's replacement found by the
// heartbeat's look and by registrations), the database file replaced by another (renamed over; a restore in place is simulated) or the lease tables dropped, SQLite faults
// other than the error codes injected at lease statements, a process
// dying between two gates (a killed engine runs on to its next gate, and
// its connections close cleanly: no hot journal), clock reads (clocks are
// stepped per process instead), and a prober in another pid namespace
// (every engine compares namespaces with the test process's own, so a
// process of another namespace sees the others as another namespace
// too).
//
// Some callers run COMMIT and BEGIN inside their transaction, as a
// caller's SQL may (CLEOLEASE_SIM_RECOMMIT=0 leaves them out). They found
// a hole that Fencing.dv closes: Check with open true took any change of
// the row for the transaction's own, and write.go's open (!AutoCommit)
// cannot tell the transaction FenceBegin saw from one the caller began
// after its own COMMIT, when another holder may have taken the lane
// (TestSimulationRecommitHole replays the first seed that showed it, with
// the configuration of issue 24: none of issue 28's faults).
//
// CLEOLEASE_SIM_STEPS sets the steps per seed and CLEOLEASE_SIM_SEEDS the
// number of seeds of TestSimulation (defaults: a short run for CI);
// CLEOLEASE_SIM_TRACE how many trace lines a failing run shows.

// simDebug lists every runnable gate in the trace.
var simDebug = os.Getenv("CLEOLEASE_SIM_DEBUG") != ""

// simTTL is the simulated engines' TTL (the heartbeat runs every TTL/3).
const simTTL = 300 * time.Millisecond

// simConfig is one simulation run.
type simConfig struct {
	seed    int64
	steps   int
	procs   int
	journal string // SQLite journal_mode: "WAL" or "DELETE"
	stops   bool   // stop and resume processes (see step)
	// recommit has some writes run COMMIT and BEGIN in the middle of their
	// transaction, as a caller's SQL may (see recommit).
	recommit bool
	// faults are the faults of issue 28 the run injects.
	faults simFaults
	// liveness runs the liveness checks (sim_live_test.go).
	liveness bool
	// steal forces StealAfterTTL on (1) or off (2); 0: the seed chooses.
	steal int
	// lose is how many datagrams in 20 that the scheduler takes out of
	// flight it loses (0: 1, a twentieth; -1: none): of the datagrams of
	// kind loseKind (their first byte) if it is not 0, a twentieth of
	// the others.
	lose     int
	loseKind byte
	// kill is how many steps in 1000 kill a process (0: 5; at most 5;
	// -1: none).
	kill int
	// loaded: with faults.workers, every worker is busy and slow (a
	// loaded service: long transactions, back to back).
	loaded bool
	// noBreak: the operator never breaks the lane (a Break frees a lane
	// that a holder which does not see its waiters would keep).
	noBreak bool
	// noInline: no hold offers its connection for a claim inside its
	// transaction (InlineConfirmer). An inline claim's commit releases the
	// lane, so a seeded bug that needs a holder keeping the lane while a
	// waiter it does not see starves (simSidecar) shows only without them.
	noInline bool
	// holes are the holes put back in every simulated engine
	// (sim_bug_test.go).
	holes holes
	// writers: each process runs up to this many writers on its engine
	// (the scheduler chooses how many, at least one): the others (help)
	// wait behind the engine's gate, as a server's goroutines do.
	writers int
	// reopen: a process with one writer now and then closes its engine
	// and opens a new one, the same process (holder id, pid) with empty
	// epoch memory, with or without TablesReady: between holds, or in
	// place of a release (its Close then hands on or releases the lane,
	// and may leave the row); one time in reopenEvery holds (0: 25).
	// Half the reopened engines only read for a while (simIdle to twice
	// that) before they use a lease again, as a process that reads.
	reopen      bool
	reopenEvery int
	// closeLocked: half the Closes of a process that reopens while it
	// holds the lane run while a tool holds SQLite's write lock (as with
	// faults.locker, without the tool's other takes of the lock).
	closeLocked bool
	// reopenReads: every reopened engine opens with TablesReady and only
	// reads for a while (the configuration of the seeded revert of issue
	// 38 item 2, which such an engine's rows stall).
	reopenReads bool
	// noForge: no datagram is forged (a forged grant makes a process
	// adopt a lane the table says it holds, which would hide a grant its
	// claim never learned of).
	noForge bool
	// giveUp: a worker whose Acquire was cancelled in a hand-off's
	// window (simWorld.cancel) gives up for a while (simIdle) one time in
	// giveUp (0: 2, every other time); one whose Acquire was cancelled
	// elsewhere, or failed at its wait bound, one time in four.
	giveUp int
}

// simFaults are the families of faults of issue 28 a run injects.
type simFaults struct {
	// cancels: the scheduler cancels Acquires at any step (the caller's
	// context ends), and a worker whose Acquire failed sometimes gives up
	// for a while (simWorld.cancel).
	cancels bool
	// workers: some workers write in a tight loop, with no pause between
	// holds (busy), and some hold the lane longer, 5 to 30 ms (slow).
	workers bool
	// dgrams: datagrams are delayed (held back while other steps run and
	// time passes; reordered, lost and duplicated ones are the
	// simulation's since issue 24), and a process's receive loop fails.
	dgrams bool
	// sidecar: the sidecar is replaced while processes run (a new
	// generation, which processes opened afterwards lock).
	sidecar bool
	// pidns: some processes run in another pid namespace, and a probe of
	// a liveness lock may answer Unknown.
	pidns bool
	// restore: the file is backed up now and then (VACUUM INTO), and the
	// last backup restored over it in place (the backup API) while the
	// processes keep it open (issue 31, item 3).
	restore bool
	// locker: a tool outside cleolease (the sqlite3 shell, a backup
	// program) takes SQLite's write lock now and then and keeps it for a
	// while, and half the Closes of a process that reopens while it
	// holds the lane run while such a tool holds it: the Close cannot
	// release the lane in time and leaves its row (issue 38 item 2). Not
	// in simAllFaults: while the tool holds the lock, most steps retry a
	// BEGIN, and a run commits half as much.
	locker bool
}

// any reports whether any family is on. (Then a running process is
// stopped less often, and the scheduler's sleeps end at the first timer:
// see pause and simOS.sleep.)
func (f simFaults) any() bool {
	return f.cancels || f.workers || f.dgrams || f.sidecar || f.pidns || f.restore || f.locker
}

// simAllFaults is every family of faults.
var simAllFaults = simFaults{cancels: true, workers: true, dgrams: true, sidecar: true, pidns: true, restore: true}

// simFull is the configuration TestSimulation runs: every fault, every
// check; up to three writers per process, and processes with one that
// close and reopen their engine (issue 38).
func simFull(seed int64, steps int, journal string) simConfig {
	return simConfig{seed: seed, steps: steps, procs: 3, journal: journal, stops: true, recommit: true, faults: simAllFaults, liveness: true,
		writers: 3, reopen: true}
}

// The configurations of the seeded-revert tests of issue 28
// (sim_bug_*_test.go): each turns on the faults that reach its hole and
// leaves out the events that would end what the hole leaves behind
// before the checks see it (a Break or a TTL steal frees any lane, a
// killed process's lane is reclaimed, and a stop excuses what it
// blocks). Each must run clean without its seeded revert: the fixed
// code survives them.

// simLateGrant reaches the grant written for a waiter that was giving up
// (item 1): waiters cancelled (and a waiter cancelled in a hand-off's
// window always gives up for a while), half the grant datagrams lost,
// receive loops that fail, no forged datagram (a forged grant makes a
// process adopt the lane). The unaware-holder check finds what it
// leaves.
func simLateGrant(seed int64, steps int) simConfig {
	return simConfig{seed: seed, steps: steps, procs: 3, journal: "WAL", recommit: true, liveness: true,
		faults: simFaults{cancels: true, workers: true, dgrams: true},
		steal:  2, lose: 10, loseKind: 'g', giveUp: 1, kill: 1, noBreak: true, noForge: true}
}

// simSidecar reaches the sidecar replaced while processes run (item 2):
// processes restarted after a replacement lock the new one, and workers
// that write long transactions back to back never leave the lane idle
// for Linger. No datagram is lost (a lost registration starves a waiter
// by itself: see claimRun.progressed). The starvation check finds what it
// leaves.
func simSidecar(seed int64, steps int) simConfig {
	return simConfig{seed: seed, steps: steps, procs: 3, journal: "WAL", recommit: true, liveness: true,
		faults: simFaults{workers: true, sidecar: true}, loaded: true,
		steal: 2, lose: -1, kill: 2, noBreak: true, noInline: true}
}

// simPidns reaches a live holder of another pid namespace whose lock
// cannot be tested (item 3): processes in another namespace, probes that
// answer Unknown. The robbery check finds what it leaves, at once.
func simPidns(seed int64, steps int) simConfig {
	return simConfig{seed: seed, steps: steps, procs: 3, journal: "WAL", stops: true, recommit: true, liveness: true,
		faults: simFaults{pidns: true}}
}

// simResult is what a run found.
type simResult struct {
	trace      []string // one line per step: what the scheduler chose
	violations []string
	commits    int // committed writes
	rowMoved   int // transactions whose lease row changed between BEGIN and COMMIT
	kills      int
	breaks     int
	fenced     int   // writes refused by a fencing check (FenceBegin or Check)
	skipped    int   // checks skipped because the checker's read was busy
	self       int   // writes whose check before COMMIT took a changed row for the transaction's own change
	passed     int   // writes that handed the lane on inside their transaction (Fencing.Pass)
	engines    Stats // the engines' counters, summed when each ends
	// faults counts the faults of issue 28 by kind: "cancel at <op>",
	// "lose g", "delay w", "reorder l", "recv fails", "sidecar", ...
	faults  map[string]int
	simTime time.Duration // simulated time the run took
}

// fault counts one fault of kind.
func (r *simResult) fault(kind string) {
	if r.faults == nil {
		r.faults = map[string]int{}
	}
	r.faults[kind]++
}

// faultSummary lists the faults counted, by kind.
func (r *simResult) faultSummary() string {
	keys := make([]string, 0, len(r.faults))
	for k := range r.faults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, r.faults[k])
	}
	return strings.TrimSpace(b.String())
}

func (r *simResult) violate(step int, format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf("step %d: ", step)+fmt.Sprintf(format, args...))
}

// simWorld is the scheduler and the checker of one run.
type simWorld struct {
	cfg     simConfig
	rng     *rand.Rand
	os      *simOS
	path    string
	dsn     string
	steal   bool
	linger  time.Duration
	res     *simResult
	checkDB *sql.DB
	wg      sync.WaitGroup
	gens    []int

	lastWrite   int64
	lastEpoch   int64 // epoch of the last committed write
	rowEpoch    int64 // epoch of the active row last seen
	epochHolder map[int64]string
	delivered   []simDatagram // recent datagrams, for replays
	mu          sync.Mutex    // guards res counters the workers bump, and reclaims
	stall       simLive       // the stuck-lane check (sim_live_test.go)
	reclaims    []simReclaim  // reclaims logged since the last check
	curStep     int           // the step being taken (read by the workers, which run only inside it)

	// The restore fault (cfg.faults.restore): the last backup, the
	// highest sim_writes id in it, the highest epoch the file had issued
	// before the last restore, and the active row's epoch that restore
	// brought back (0: none); checked is when the last check ended.
	snap          string
	snapWrite     int64
	issued        int64
	restoredEpoch int64
	checked       time.Time // when a check last ended with the write lock free
	lowFree       time.Time // the lowest process clock then (lowestClock)
	// The locker fault (cfg.faults.locker): its connection, holding
	// SQLite's write lock while locked.
	lockDB  *sql.DB
	lockCon *sql.Conn
	locked  bool

	// chain is the last epoch at or below issued that check accepted
	// after a restore (0: none): the restored row when its holder, alive,
	// held that very grant all along or has issued no epoch above it (see
	// restore), or a grant whose clock read below issued. Hand-offs count
	// on from it, by one (see check).
	chain int64
}

// newSimDB creates the file of a run, outside the bubble.
func newSimDB(t *testing.T, journal string) string {
	p := filepath.Join(testdir.New(t), "sim.db")
	db, err := sql.Open("sqlite3", "file:"+p+"?_journal_mode="+journal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE sim_writes(id INTEGER PRIMARY KEY, proc INTEGER, holder TEXT, epoch INTEGER,
		begin_holder TEXT, begin_epoch INTEGER, commit_holder TEXT, commit_epoch INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return p
}

// runSim runs cfg inside a synctest bubble and returns its findings.
func runSim(t *testing.T, cfg simConfig) *simResult {
	path := newSimDB(t, cfg.journal)
	res := &simResult{}
	saved := lookupProcess
	defer func() { lookupProcess = saved }()
	synctest.Test(t, func(t *testing.T) {
		w := &simWorld{cfg: cfg, rng: rand.New(rand.NewSource(cfg.seed)), os: newSimOS(), path: path,
			dsn: "file:" + path + "?_journal_mode=" + cfg.journal + "&_busy_timeout=0", res: res,
			epochHolder: map[int64]string{}, stall: simLive{since: -1}}
		w.os.holes = cfg.holes
		lookupProcess = w.os.lookup // the pid path answers from the simulated world
		w.steal = w.rng.Intn(2) == 0
		if cfg.steal != 0 {
			w.steal = cfg.steal == 1
		}
		began := time.Now()
		w.linger = []time.Duration{0, 2 * time.Millisecond, 20 * time.Millisecond}[w.rng.Intn(3)]
		res.trace = append(res.trace, fmt.Sprintf("config steal=%v linger=%v procs=%d journal=%s", w.steal, w.linger, cfg.procs, cfg.journal))
		var err error
		if w.checkDB, err = sql.Open("sqlite3", w.dsn); err != nil {
			t.Fatal(err)
		}
		w.checkDB.SetMaxOpenConns(1)
		w.os.procs = make([]*simProc, cfg.procs)
		w.gens = make([]int, cfg.procs)
		for i := range cfg.procs {
			if err := w.start(i); err != nil {
				t.Fatal(err)
			}
			w.note("start " + w.os.procs[i].describe())
		}
		if err := w.startOperator(); err != nil {
			t.Fatal(err)
		}
		for step := range cfg.steps {
			synctest.Wait()
			w.curStep = step
			what := w.step()
			w.note(fmt.Sprintf("%d %s", step, what))
			synctest.Wait()
			w.check(step)
		}
		res.simTime = time.Since(began)
		w.stop()
		w.checkDB.Close()
	})
	return res
}

// start starts process i's next generation: a new engine (a new holder
// id) and its worker.
func (w *simWorld) start(i int) error {
	gen := w.gens[i]
	w.gens[i]++
	id := fmt.Sprintf("sim-%d-%d", i, gen)
	p := &simProc{idx: i, gen: gen, id: id, pid: int64(4000000 + 1000*i + gen), slot: slotFor(id),
		inbox: make(chan []byte, 1024), clock: &simClock{}, done: make(chan struct{}),
	}
	if w.cfg.faults.pidns && w.rng.Intn(3) == 0 {
		p.pidns = "other"
	}
	p.busy = w.cfg.faults.workers && (w.cfg.loaded || w.rng.Intn(3) == 0)
	p.slow = w.cfg.faults.workers && (w.cfg.loaded || w.rng.Intn(3) == 0)
	w.os.add(p)
	w.os.mu.Lock()
	w.os.procs[i] = p
	w.os.mu.Unlock()
	p.writers = 1
	if w.cfg.writers > 1 {
		p.writers += w.rng.Intn(w.cfg.writers)
	}
	eng, err := w.openEngine(p, false)
	if err != nil {
		return fmt.Errorf("open %s: %v", id, err)
	}
	p.setEngine(eng)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(p.done)
		w.work(p, rand.New(rand.NewSource(w.cfg.seed*1000+int64(i)*10+int64(gen))))
	}()
	for k := 1; k < p.writers; k++ {
		w.wg.Add(1)
		go w.help(p, rand.New(rand.NewSource(w.cfg.seed*1000+int64(i)*10+int64(gen)+int64(k)*100000)))
	}
	return nil
}

// openEngine opens an engine of process p on the file (tablesReady:
// Options.TablesReady, as the driver gives it when the lease tables are
// complete).
func (w *simWorld) openEngine(p *simProc, tablesReady bool) (*Engine, error) {
	eng, err := openWith(context.Background(), Options{Base: testBase, Path: w.path, DSN: w.dsn, TTL: simTTL,
		Linger: w.linger, StealAfterTTL: w.steal, Clock: p.clock, Logger: slog.New(simLogHandler{w, p}), TablesReady: tablesReady}, w.os.seams(p))
	if err != nil {
		return nil, err
	}
	// Its pid namespace and start time, before any lane reads them (the
	// engine's goroutines touch start only through a lane: laneState.me).
	eng.start = simIdentity(eng.start, p.pidns)
	eng.setHook(func(op string) error { return w.os.gate(p, "lease/"+op) })
	return eng, nil
}

// reopen closes p's engine and opens a new one for p (the same process:
// its holder id and pid; an engine's epoch memory starts empty), with or
// without TablesReady. With h, p's worker holds the lane: the Close ends
// the hold (it hands the lane on or releases it, and may leave the row
// when SQLite's write lock is not free in time). false when p died.
func (w *simWorld) reopen(p *simProc, h *Hold, rng *rand.Rand) bool {
	if w.os.gate(p, "work/reopen") != nil {
		return false
	}
	w.givesUp(p) // not inside Acquire (a failed one left it wanting until its retry)
	old := p.engine()
	if l := old.knownLane("s", "l"); l != nil {
		w.os.mu.Lock()
		p.prevHigh = max(p.prevHigh, l.epochs.high.Load())
		w.os.mu.Unlock()
	}
	var tool *sql.DB
	if h != nil && (w.cfg.faults.locker || w.cfg.closeLocked) && rng.Intn(2) == 0 {
		// A tool outside cleolease holds SQLite's write lock across the
		// Close: its hand-off cannot take it in time and leaves the row.
		if db, err := sql.Open("sqlite3", w.dsn); err == nil {
			db.SetMaxOpenConns(1)
			if _, err := db.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err == nil {
				tool = db
				w.fault("a tool holds the write lock across a Close")
			} else {
				db.Close()
			}
		}
	}
	w.closeEngine(old)
	if tool != nil {
		tool.ExecContext(context.Background(), "ROLLBACK")
		tool.Close()
	}
	if _, left := leftRows.Load(old.leftKey()); left {
		w.fault("close left the row")
	}
	ready := w.cfg.reopenReads || rng.Intn(2) == 0
	eng, err := w.openEngine(p, ready)
	if err != nil {
		if !w.os.isDead(p) {
			w.res.violate(w.curStep, "reopen %v: %v", p, err)
		}
		return false
	}
	w.os.mu.Lock()
	dead := p.dead
	if !dead {
		p.setEngine(eng)
	}
	w.os.mu.Unlock()
	if dead {
		w.closeEngine(eng)
		return false
	}
	w.fault("reopen")
	idle := time.Duration(0)
	if w.cfg.reopenReads || rng.Intn(2) == 0 {
		idle = simIdle + time.Duration(rng.Int63n(int64(simIdle)))
	}
	w.note(fmt.Sprintf("%d p%d reopened its engine (holding: %v, TablesReady: %v, reads only for %v)", w.curStep, p.idx, h != nil, ready, idle))
	time.Sleep(idle)
	return true
}

// help is one of p's extra writers (simConfig.writers): acquire, one
// fenced write that may hand the lane on, release, again, until p dies.
// It waits behind the engine's gate while another writer of p holds or
// waits; its Acquire is never cancelled.
func (w *simWorld) help(p *simProc, rng *rand.Rand) {
	defer w.wg.Done()
	db, err := sql.Open("sqlite3", w.dsn)
	if err != nil {
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for {
		time.Sleep(time.Duration(rng.Intn(4)) * time.Millisecond)
		if w.os.gate(p, "help/acquire") != nil {
			return
		}
		w.helping(p, 1, 0)
		h, err := p.engine().Acquire(context.Background(), "s", "l", AcquireOptions{Wait: 3 * simTTL, Require: true})
		w.helping(p, -1, 0)
		if err != nil {
			continue // the next gate ends a dead process
		}
		w.helping(p, 0, 1)
		w.write(p, db, nil, h, rng, true, nil)
		time.Sleep(time.Duration(rng.Intn(3)) * time.Millisecond)
		if w.os.gate(p, "help/release") != nil {
			return // dead: no release
		}
		h.Release()
		w.helping(p, 0, -1)
	}
}

// startOperator starts the process that breaks lanes (as an
// administrator's `cleolease break` would, from a process of its own).
func (w *simWorld) startOperator() error {
	id := "sim-operator"
	p := &simProc{idx: w.cfg.procs, id: id, pid: 4100000, slot: slotFor(id),
		inbox: make(chan []byte, 1024), clock: &simClock{}, done: make(chan struct{})}
	close(p.done)
	w.os.add(p)
	eng, err := openWith(context.Background(), Options{Base: testBase, Path: w.path, DSN: w.dsn, TTL: simTTL, Clock: p.clock}, w.os.seams(p))
	if err != nil {
		return fmt.Errorf("open %s: %v", id, err)
	}

	eng.setHook(func(op string) error { return w.os.gate(p, "lease/"+op) })
	p.setEngine(eng)
	w.os.mu.Lock()
	w.os.operator = p
	w.os.mu.Unlock()
	return nil
}

// work is process p's writer: acquire, one to three fenced writes,
// release, again, until p dies. With cfg.faults.cancels the scheduler may cancel
// its Acquire at any step (simWorld.cancel), and a worker whose Acquire
// failed (cancelled, or at its wait bound) sometimes gives up: it does
// other work for simIdle, without the lane.
func (w *simWorld) work(p *simProc, rng *rand.Rand) {
	db, err := sql.Open("sqlite3", w.dsn)
	if err != nil {
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for {
		if p.busy {
			// Its work between transactions takes a little time, as it
			// would (were no time to pass at all, no other process's
			// timer would ever fire while it runs).
			time.Sleep(time.Duration(10+10*rng.Intn(10)) * time.Microsecond)
		} else {
			time.Sleep(time.Duration(rng.Intn(4)) * time.Millisecond) // between holds
		}
		if w.cfg.reopen && p.writers == 1 && rng.Intn(cmp.Or(w.cfg.reopenEvery, 25)) == 0 && !w.reopen(p, nil, rng) {
			return
		}
		if w.os.gate(p, "work/acquire") != nil {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		w.wants(p, cancel)
		// Half the holds offer their first write's connection for a claim
		// inside its transaction (InlineConfirmer), as the driver does.
		opts := AcquireOptions{Wait: 3 * simTTL, Require: true}
		var first *sql.Conn
		var cf *simTurnConfirmer
		if !w.cfg.noInline && rng.Intn(2) == 0 {
			if c, err := db.Conn(context.Background()); err == nil {
				first = c
				c.Raw(func(dc any) error {
					cf = &simTurnConfirmer{rawInline: rawInline{rawConfirmer{dc.(*sqlite3.SQLiteConn)}}, e: p.engine()}
					opts.Confirm = cf
					return nil
				})
			}
		}
		h, err := p.engine().Acquire(ctx, "s", "l", opts)
		w.acquired(p, err == nil)
		cancel()
		if err != nil && first != nil {
			cf.endTurn()
			first.Close()
		}
		if err != nil {
			cancelled, unavailable := ctx.Err() != nil, errors.Is(err, ErrUnavailable)
			// It may give up: for long after a cancel in a hand-off's
			// window (simWorld.cancel), for a moment otherwise.
			w.os.mu.Lock()
			endangered := p.endangered
			p.endangered = false
			w.os.mu.Unlock()
			giveUp, idle := 4, simPause+time.Duration(rng.Int63n(int64(4*simPause)))
			if endangered {
				giveUp, idle = cmp.Or(w.cfg.giveUp, 2), simIdle+time.Duration(rng.Int63n(int64(simIdle)))
			}
			if w.cfg.faults.cancels && (cancelled || unavailable) && rng.Intn(giveUp) == 0 {
				w.givesUp(p)
				if endangered {
					w.fault("gives up for long")
				}
				time.Sleep(idle)
			}
			continue // the next gate ends a dead process
		}
		for n := 1 + rng.Intn(3); n > 0; n-- {
			var turn *WriteTurn
			if first != nil {
				turn = cf.turn // taken with the caller's BEGIN (h.Begun)
			}
			ok := w.write(p, db, first, h, rng, n == 1, turn)
			first = nil // (write closed it)
			if !ok {
				break
			}
		}
		if first != nil {
			cf.endTurn()
			first.Close()
		}
		rest := time.Duration(rng.Intn(3)) * time.Millisecond // the rest of the hold
		if p.slow {
			rest = time.Duration(5+rng.Intn(26)) * time.Millisecond
		}
		time.Sleep(rest)
		if w.cfg.reopen && p.writers == 1 && rng.Intn(cmp.Or(w.cfg.reopenEvery, 25)) == 0 {
			// The process closes its engine while it holds the lane.
			ok := w.reopen(p, h, rng)
			w.released(p)
			if !ok {
				return
			}
			continue
		}
		if w.os.gate(p, "work/release") != nil {
			return // dead: no release
		}
		h.Release()
		w.released(p)
	}
}

// simIdle is how long, at least, a worker that gave up after a cancel in
// a hand-off's window does other work (up to twice that): longer than
// simUnawareBound, so that a lane granted to it too late is seen left
// with a process unaware of it; simPause is how long, at least, one that
// gave up otherwise does (up to five times that).
const (
	simIdle  = 5 * time.Second / 2
	simPause = 200 * time.Millisecond
)

// leaseRowSQL reads the lane's active (holder, epoch) inside a statement.
const (
	simHolderSQL = `(SELECT holder_id FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1)`
	simEpochSQL  = `(SELECT epoch FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1)`
)

// write makes one fenced write under h on db, and reports whether it
// committed. The last write of a hold hands the lane on inside its
// transaction when a waiter registered (Fencing.Pass), as the driver's
// commit does. c, when not nil, is the connection the hold's Acquire was
// offered (AcquireOptions.Confirm), closed by write: when the Hold is
// Begun its transaction is already open there, and a grant claimed in it
// (Hold.Inline) is settled before the COMMIT (Fencing.EndInline).
func (w *simWorld) write(p *simProc, db *sql.DB, c *sql.Conn, h *Hold, rng *rand.Rand, last bool, turn *WriteTurn) bool {
	ctx := context.Background()
	defer turn.End()
	if c == nil {
		var err error
		if c, err = db.Conn(ctx); err != nil {
			return false
		}
	}
	defer c.Close()
	var err error
	begun := h.Begun()
	if !begun && turn == nil {
		// The file's write turn, as the driver takes it: after the lane,
		// before BEGIN IMMEDIATE, until the transaction ends.
		turn, _ = p.engine().TakeTurn(ctx, func() time.Duration { return 5 * time.Second }, 3*simTTL)
		defer turn.End()
	}
	if begun && w.os.gate(p, "data/begun") != nil {
		c.ExecContext(ctx, "ROLLBACK")
		return false
	}
	for !begun {
		if w.os.gate(p, "data/begin") != nil {
			return false
		}
		_, err = c.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil {
			break
		}
		if !isBusy(err) {
			return false
		}
	}
	rollback := func() bool { c.ExecContext(ctx, "ROLLBACK"); return false }
	var f *Fencing
	var lost bool
	err = c.Raw(func(dc any) (err error) {
		f, lost, err = h.FenceBegin(ctx, dc.(driver.QueryerContext))
		return err
	})
	if err != nil || lost {
		if lost {
			w.count(&w.res.fenced)
		}
		return rollback()
	}
	r, err := c.ExecContext(ctx, `INSERT INTO sim_writes(proc, holder, epoch, begin_holder, begin_epoch)
		VALUES (?, ?, ?, `+simHolderSQL+`, `+simEpochSQL+`)`, p.idx, p.id, h.Epoch())
	if err != nil {
		return rollback()
	}
	id, _ := r.LastInsertId()
	if w.os.gate(p, "data/body") != nil {
		return rollback()
	}
	if w.cfg.recommit && rng.Intn(4) == 0 {
		// The caller's SQL ends the transaction and opens another one
		// (what write.go's commitFenced cannot tell from the one
		// FenceBegin saw: it passes open = !AutoCommit()).
		if !w.recommit(ctx, p, c, id, h) {
			return rollback()
		}
		r, err := c.ExecContext(ctx, `INSERT INTO sim_writes(proc, holder, epoch) VALUES (?, ?, ?)`, p.idx, p.id, h.Epoch())
		if err != nil {
			return rollback()
		}
		id, _ = r.LastInsertId()
	}
	var auto bool
	err = c.Raw(func(dc any) error {
		auto = dc.(*sqlite3.SQLiteConn).AutoCommit()
		return f.Check(ctx, dc.(driver.QueryerContext), !auto)
	})
	if err != nil {
		if errors.Is(err, ErrLost) {
			w.count(&w.res.fenced)
		}
		return rollback()
	}
	if f.self {
		w.count(&w.res.self)
	}
	if _, err := c.ExecContext(ctx, `UPDATE sim_writes SET commit_holder = `+simHolderSQL+`, commit_epoch = `+simEpochSQL+`
		WHERE id = ?`, id); err != nil {
		return rollback()
	}
	if err := c.Raw(func(dc any) error {
		return f.EndInline(ctx, dc.(driver.QueryerContext), !auto, last)
	}); err != nil {
		return rollback()
	}
	var pass *Pass
	if last && !auto {
		err = c.Raw(func(dc any) (err error) {
			pass, err = f.Pass(ctx, dc.(driver.QueryerContext))
			return err
		})
		if err != nil {
			return rollback()
		}
	}
	failed := func() bool {
		rollback()
		if pass != nil {
			pass.Failed()
		}
		return false
	}
	if w.os.gate(p, "data/commit") != nil {
		return failed()
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return failed()
	}
	if pass != nil {
		w.count(&w.res.passed)
		pass.Committed()
	}
	f.Committed()
	return true
}

// simTurnConfirmer is rawInline taking the file's write turn as the
// driver's connection does (internal/core: confirmConn, inlineConn): with
// the BEGIN a grant is confirmed in, and only tried for an inline claim.
type simTurnConfirmer struct {
	rawInline
	e    *Engine
	turn *WriteTurn
}

func (c *simTurnConfirmer) BeginImmediate(ctx context.Context) error {
	if c.turn == nil {
		t, err := c.e.TakeTurn(ctx, func() time.Duration { return 5 * time.Second }, 3*simTTL)
		if err != nil {
			return err
		}
		c.turn = t
	}
	if err := c.rawInline.BeginImmediate(ctx); err != nil {
		c.endTurn()
		return err
	}
	return nil
}

func (c *simTurnConfirmer) TryBeginImmediate(ctx context.Context) (bool, error) {
	if c.turn == nil {
		if c.turn = c.e.TryTurn(); c.turn == nil {
			return false, nil
		}
	}
	begun, err := c.rawInline.TryBeginImmediate(ctx)
	if !begun {
		c.endTurn()
	}
	return begun, err
}

func (c *simTurnConfirmer) Rollback() {
	c.rawInline.Rollback()
	c.endTurn()
}

func (c *simTurnConfirmer) endTurn() {
	c.turn.End()
	c.turn = nil
}

// recommit commits the write so far (recording the row at that COMMIT)
// and begins a new transaction on c, with a step in between.
func (w *simWorld) recommit(ctx context.Context, p *simProc, c *sql.Conn, id int64, h *Hold) bool {
	if _, err := c.ExecContext(ctx, `UPDATE sim_writes SET commit_holder = `+simHolderSQL+`, commit_epoch = `+simEpochSQL+`
		WHERE id = ?`, id); err != nil {
		return false
	}
	h.Exposing() // as the driver does for a caller's COMMIT (internal/core)
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return false
	}
	if w.os.gate(p, "data/recommit") != nil {
		return false
	}
	_, err := c.ExecContext(ctx, "BEGIN")
	return err == nil
}

// closeEngine closes eng and adds its counters to the result.
func (w *simWorld) closeEngine(eng *Engine) {
	eng.Close()
	st := eng.Stats()
	w.mu.Lock()
	defer w.mu.Unlock()
	e := &w.res.engines
	e.Grants += st.Grants
	e.Claims += st.Claims
	e.InlineClaims += st.InlineClaims
	e.Handoffs += st.Handoffs
	e.Unavailable += st.Unavailable
	e.Lost += st.Lost
	e.Fenced += st.Fenced
	e.ReclaimDead += st.ReclaimDead
	e.ReclaimTTL += st.ReclaimTTL
	e.DeadWaiters += st.DeadWaiters
	e.Breaks += st.Breaks
}

// note adds a line to the trace, from any goroutine.
func (w *simWorld) note(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.res.trace = append(w.res.trace, line)
}

// fault counts one fault of kind (simResult.fault), from any goroutine.
func (w *simWorld) fault(kind string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.res.fault(kind)
}

func (w *simWorld) count(n *int) {
	w.mu.Lock()
	*n++
	w.mu.Unlock()
}

// live lists the processes that are not dead.
func (w *simWorld) live() []*simProc {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	var out []*simProc
	for _, p := range w.os.procs {
		if p != nil && !p.dead {
			out = append(out, p)
		}
	}
	return out
}

// step makes one thing happen and says what.
func (w *simWorld) step() string {
	rng := w.rng
	gates := w.os.runnable()
	ready := w.os.deliverable(time.Now())
	inflight := len(ready)
	roll := rng.Intn(1000)
	switch {
	// Each kind of step has its own range of rolls: a kind turned off
	// leaves its range to the gates, not to the next kind.
	case roll < w.kills():
		return w.kill()
	case roll >= 5 && roll < 30:
		if s := w.restart(); s != "" {
			return s
		}
	case roll >= 30 && roll < 50 && w.cfg.stops:
		if s := w.pause(); s != "" {
			return s
		}
	case roll >= 50 && roll < 55 && !w.cfg.noBreak:
		if s := w.breakLane(); s != "" {
			return s
		}
	case roll >= 55 && roll < 70:
		return w.stepClock()
	case roll >= 70 && roll < 90 && !w.cfg.noForge:
		return w.forge()
	case roll >= 90 && roll < 250 && inflight > 0:
		return w.deliver(ready)
	case roll >= 250 && roll < 253 && w.cfg.faults.cancels:
		if s := w.cancel(w.acquiring(), false); s != "" {
			return s
		}
	case roll >= 265 && roll < 267 && w.cfg.faults.dgrams:
		if s := w.failRecv(); s != "" {
			return s
		}
	case roll == 267 && w.cfg.faults.sidecar:
		return w.replaceSidecar()
	case roll >= 253 && roll < 256 && w.cfg.faults.restore:
		return w.backup()
	case roll >= 256 && roll < 259 && w.cfg.faults.restore && w.snap != "":
		return w.restore()
	case roll >= 259 && roll < 262 && w.cfg.faults.locker:
		return w.toggleLocker()
	case roll >= 268 && roll < 368 && w.cfg.faults.cancels:
		// The scheduler favours the window of issue 28's first hole: a
		// waiter gives up while a hand-off that found it waiting commits.
		if s := w.cancel(w.os.endangered(), true); s != "" {
			w.fault("cancel in a hand-off's window")
			return s + " (a hand-off found it waiting)"
		}
	}
	if len(gates) > 0 {
		g := gates[rng.Intn(len(gates))]
		var inject error
		if strings.HasPrefix(g.op, "lease/") && rng.Intn(20) == 0 {
			inject = sqlite3.Error{Code: sqlite3.ErrBusy}
			if strings.HasSuffix(g.op, "/commit") && rng.Intn(2) == 0 {
				inject = sqlite3.Error{Code: sqlite3.ErrIoErr}
			}
		}
		if g.op == "os/probe" && w.cfg.faults.pidns && rng.Intn(8) == 0 {
			inject = errSimUnknown // the lock cannot be tested: Unknown
			w.fault("probe unknown")
		}
		w.os.release(g, inject)
		if inject != nil {
			return fmt.Sprintf("p%d %s <- %v", g.p.idx, g.op, inject)
		}
		if simDebug {
			var all []string
			for _, x := range gates {
				all = append(all, fmt.Sprintf("p%d:%s", x.p.idx, x.op))
			}
			return fmt.Sprintf("p%d %s of %v", g.p.idx, g.op, all)
		}
		return fmt.Sprintf("p%d %s", g.p.idx, g.op)
	}
	if inflight > 0 && roll%2 == 0 {
		return w.deliver(ready)
	}
	// Time passes only when no process can take a step: a goroutine
	// parked at a gate never has timers fire behind its back (which would
	// leave the Go runtime to choose among several ready channels of the
	// engine's selects when it goes on), except in a stopped process.
	d := []time.Duration{100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond,
		simTTL / 2, 2 * simTTL}[rng.Intn(6)]
	var excuse simExcuse
	if w.cfg.liveness {
		excuse = w.sleepExcuse()
	}
	what := "sleep " + d.String()
	if w.cfg.faults.any() {
		// Time stops at the first goroutine that a timer wakes.
		if passed := w.os.sleep(d); passed < d {
			d = passed
			what += ", woken after " + d.String()
		}
	} else {
		time.Sleep(d) // (the replays of issue 24's seeds)
	}
	w.slept(d, excuse)
	switch {
	case excuse.lane != "" && w.stall.cur.stuck():
		return what + " (" + excuse.lane + ")"
	case w.stall.stuck > 0:
		return what + " (stuck " + w.stall.stuck.String() + ")"
	}
	return what
}

// acquiring lists the live processes inside Acquire.
func (w *simWorld) acquiring() []*simProc {
	o := w.os
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*simProc
	for _, p := range o.procs {
		if p != nil && !p.dead && p.cancel != nil {
			out = append(out, p)
		}
	}
	return out
}

// cancel ends the Acquire in progress of one of cands (its caller's
// context ends), wherever its claim is: at the claim transaction, while
// it registers, while it awaits, or while it quits after its wait bound.
// A worker whose Acquire was cancelled gives up for a while one time in
// four, or, when endangered (a hand-off found it waiting), one time in
// cfg.giveUp.
func (w *simWorld) cancel(cands []*simProc, endangered bool) string {
	if len(cands) == 0 {
		return ""
	}
	p := cands[w.rng.Intn(len(cands))]
	o := w.os
	o.mu.Lock()
	p.endangered = endangered
	cancel := p.cancel
	var at []string
	for _, g := range o.parked {
		if g.p == p {
			at = append(at, g.op)
		}
	}
	o.mu.Unlock()
	sort.Strings(at)
	where := "await"
	if len(at) > 0 {
		where = strings.Join(at, "+")
	}
	w.fault("cancel at " + where)
	cancel()
	return fmt.Sprintf("cancel p%d at %s", p.idx, where)
}

// failRecv makes a live process's next Recv fail. (On the code of c2e842a
// the doorbell's receive loop then ends for good: a grant to a claim that
// gave up is never adopted, the second half of issue 28's first hole.)
func (w *simWorld) failRecv() string {
	live := w.live()
	if len(live) == 0 {
		return ""
	}
	p := live[w.rng.Intn(len(live))]
	if !w.os.failRecv(p) {
		return ""
	}
	w.fault("recv fails")
	return fmt.Sprintf("recv fails p%d", p.idx)
}

// replaceSidecar removes the sidecar while processes run: a process that
// opens from now on creates and locks a new one (the next generation).
// The running engines notice as they would without a file watch (the
// simulated OS has none): at a registration naming a generation they do
// not see, or within TTL/3 (the heartbeat's look); with a watch the
// report only marks the move due for the next lease use (issue 39:
// nothing in the user's directory is created from a background
// goroutine's report).
func (w *simWorld) replaceSidecar() string {
	o := w.os
	o.mu.Lock()
	o.sidecar++
	gen := o.sidecar
	o.mu.Unlock()
	w.fault("sidecar")
	return fmt.Sprintf("sidecar replaced: generation %d", gen)
}

// backup writes a backup of the file (VACUUM INTO, through the checker's
// connection), replacing the last one.
func (w *simWorld) backup() string {
	ctx := context.Background()
	snap := w.path + ".backup"
	os.Remove(snap)
	if _, err := w.checkDB.ExecContext(ctx, `VACUUM INTO ?`, snap); err != nil {
		w.fault("backup refused")
		return "backup refused: " + err.Error()
	}
	src, err := sql.Open("sqlite3", "file:"+snap+"?mode=ro")
	if err != nil {
		return "backup unreadable: " + err.Error()
	}
	defer src.Close()
	var last int64
	if err := src.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM sim_writes`).Scan(&last); err != nil {
		return "backup unreadable: " + err.Error()
	}
	w.snap, w.snapWrite = snap, last
	w.fault("backup")
	return fmt.Sprintf("backup (writes up to %d)", last)
}

// toggleLocker takes SQLite's write lock for a tool outside cleolease, or
// lets it go.
func (w *simWorld) toggleLocker() string {
	ctx := context.Background()
	if w.locked {
		w.lockCon.ExecContext(ctx, "ROLLBACK")
		w.locked = false
		return "locker: the tool lets the write lock go"
	}
	if w.lockDB == nil {
		db, err := sql.Open("sqlite3", w.dsn)
		if err != nil {
			return "locker: " + err.Error()
		}
		c, err := db.Conn(ctx)
		if err != nil {
			db.Close()
			return "locker: " + err.Error()
		}
		w.lockDB, w.lockCon = db, c
	}
	if _, err := w.lockCon.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return "locker: the write lock is taken"
	}
	w.locked = true
	w.fault("locker")
	return "locker: a tool takes the write lock"
}

// restore copies the last backup over the file in place (SQLite's backup
// API: the inode is kept, and every process's connections see the old
// content), taking no lease: old lease rows and old epochs come back,
// naming processes that may live. The checks then expect every epoch
// granted from now on to exceed every epoch issued before (the restored
// row's own excepted, and its hand-offs while its holder never issued
// an epoch above it), and the writes to go on from the backup's.
func (w *simWorld) restore() string {
	ctx := context.Background()
	var issued int64
	if err := w.checkDB.QueryRowContext(ctx, `SELECT coalesce(max(epoch), 0) FROM _writer_leases`).Scan(&issued); err != nil {
		return "restore skipped: " + err.Error()
	}
	src, err := sql.Open("sqlite3", "file:"+w.snap+"?mode=ro")
	if err != nil {
		return "restore skipped: " + err.Error()
	}
	defer src.Close()
	sc, err := src.Conn(ctx)
	if err != nil {
		return "restore skipped: " + err.Error()
	}
	defer sc.Close()
	dc, err := w.checkDB.Conn(ctx)
	if err != nil {
		return "restore skipped: " + err.Error()
	}
	defer dc.Close()
	err = dc.Raw(func(d any) error {
		return sc.Raw(func(s any) error {
			bk, err := d.(*sqlite3.SQLiteConn).Backup("main", s.(*sqlite3.SQLiteConn), "main")
			if err != nil {
				return err
			}
			done, err := bk.Step(-1)
			if ferr := bk.Finish(); err == nil {
				err = ferr
			}
			if err == nil && !done {
				err = errors.New("backup not done")
			}
			return err
		})
	})
	if err != nil {
		// A process holds a lock on the file (parked inside a
		// transaction): not now.
		w.fault("restore refused")
		return "restore refused: " + err.Error()
	}
	var restored int64
	var holder string
	err = dc.QueryRowContext(ctx, `SELECT coalesce((SELECT epoch FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1), 0),
		coalesce((SELECT holder_id FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1), '')`).Scan(&restored, &holder)
	if err != nil {
		w.res.violate(w.curStep, "reading the restored row: %v", err)
	}
	w.chain = 0
	state := "no live holder"
	for _, p := range w.live() {
		if p.id != holder {
			continue
		}
		// What it has seen or issued: its engine's epoch memory, and its
		// earlier engines' (a reopened engine starts with none).
		w.os.mu.Lock()
		high := p.prevHigh
		w.os.mu.Unlock()
		l := p.engine().knownLane("s", "l")
		if l == nil && high == 0 {
			// It never used the lane: it issued no epoch from the row.
			w.chain, state = restored, p.id+" never used the lane"
			break
		}
		var g *grant
		if l != nil {
			g, high = l.currentRow(), max(high, l.epochs.high.Load())
		}
		state = fmt.Sprintf("%s holds %s, has seen or issued up to %d", p.id, describeGrant(g), high)
		switch {
		case g != nil && !g.lost.Load() && g.epoch == restored:
			// Its grant, which it may have lost in the history the
			// restore undid without noticing, is the row again: it
			// hands it on at epoch + 1, a hand-off.
			w.chain = restored
		case high < restored+1:
			// It has issued no epoch above the row's (a holder notes
			// every epoch it grants): restored + 1 was never issued from
			// this row. Its claim may have taken the row as its grant
			// just before the restore (handedToUs), and not recorded it
			// yet: it hands it on at epoch + 1 too.
			w.chain = restored
		}
	}
	w.issued = max(w.issued, issued)
	w.restoredEpoch = restored
	w.rowEpoch = restored
	w.lastWrite = w.snapWrite
	// Writes go on from the backup's, at epochs checked against the
	// active row (check): the order and holder of epochs is checked from
	// here on.
	w.lastEpoch = 0
	clear(w.epochHolder)
	w.unknownState()
	w.fault("restore")
	return fmt.Sprintf("restore: the backup over the file (row at epoch %d of %q, writes up to %d; issued up to %d; %s; hand-offs from the row allowed: %v)",
		restored, holder, w.snapWrite, issued, state, w.chain != 0)
}

// describeGrant says what grant g is for a trace line.
func describeGrant(g *grant) string {
	switch {
	case g == nil:
		return "no grant"
	case g.lost.Load():
		return fmt.Sprintf("a lost grant at epoch %d", g.epoch)
	}
	return fmt.Sprintf("a grant at epoch %d", g.epoch)
}

// kills is how many steps in 1000 kill a process (cfg.kill).
func (w *simWorld) kills() int {
	switch {
	case w.cfg.kill < 0:
		return 0
	case w.cfg.kill == 0:
		return 5
	}
	return min(w.cfg.kill, 5)
}

func (w *simWorld) kill() string {
	live := w.live()
	if len(live) == 0 {
		return "kill: nobody"
	}
	p := live[w.rng.Intn(len(live))]
	w.os.kill(p)
	w.res.kills++
	w.wg.Add(1)
	go func() { // the engine's remains: every step of it fails now
		defer w.wg.Done()
		w.closeEngine(p.engine()) // ends its goroutines, which a dead process would not run
	}()
	return fmt.Sprintf("kill p%d (%s)", p.idx, p.id)
}

func (w *simWorld) restart() string {
	w.os.mu.Lock()
	procs := append([]*simProc(nil), w.os.procs...)
	w.os.mu.Unlock()
	for i, p := range procs {
		if !w.os.isDead(p) {
			continue
		}
		select {
		case <-p.done:
		default:
			// Its worker has not met a gate since (with cfg.faults.cancels
			// it may sleep for seconds, having given up; it ends at its
			// next gate): the process is gone all the same.
			if !w.cfg.faults.cancels {
				continue
			}
		}
		if err := w.start(i); err != nil {
			w.res.violate(-1, "%v", err)
			return "restart failed"
		}
		return "restart " + w.os.procs[i].describe()
	}
	return ""
}

// pause stops or resumes a process. With any cfg.faults a running process
// is stopped only one time in three (else nothing happens), so that
// processes spend most of the run running (a toggle alone keeps each
// stopped half the time).
func (w *simWorld) pause() string {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	p := w.os.procs[w.rng.Intn(len(w.os.procs))]
	if w.cfg.faults.any() && !p.paused && w.rng.Intn(3) != 0 {
		return ""
	}
	p.paused = !p.paused
	if p.paused {
		return fmt.Sprintf("stop p%d", p.idx)
	}
	return fmt.Sprintf("resume p%d", p.idx)
}

func (w *simWorld) breakLane() string {
	p := w.os.operator
	w.os.mu.Lock()
	busy := p.breaking
	p.breaking = true
	w.os.mu.Unlock()
	if busy {
		return ""
	}
	w.res.breaks++
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		p.engine().Break(context.Background(), "s", "l", true)
		w.os.mu.Lock()
		p.breaking = false
		w.os.mu.Unlock()
	}()
	return "break"
}

func (w *simWorld) stepClock() string {
	p := w.os.procs[w.rng.Intn(len(w.os.procs))]
	d := time.Duration(w.rng.Int63n(int64(4*simTTL))) - 2*simTTL
	p.clock.skew.Add(int64(d))
	return fmt.Sprintf("clock p%d %+v", p.idx, d)
}

// deliver delivers, loses, duplicates or delays one of the datagrams in
// flight that are not held back (ready, oldest first). Any of them may be
// delivered, a later one before an earlier one (a reorder).
func (w *simWorld) deliver(ready []int) string {
	k := w.rng.Intn(len(ready))
	i := ready[k]
	w.os.mu.Lock()
	kind := w.os.inflight[i].kind()
	w.os.mu.Unlock()
	lose := w.cfg.lose // in 20
	switch {
	case lose == 0 || w.cfg.loseKind != 0 && kind != w.cfg.loseKind:
		lose = 1
	case lose < 0:
		lose = 0
	}
	switch r := w.rng.Intn(20); {
	case r < lose:
		d := w.os.deliver(i, true)
		w.fault(fmt.Sprintf("lose %c", d.kind()))
		return fmt.Sprintf("lose %c %s->%s", d.kind(), d.from, d.to)
	case r == lose:
		w.os.mu.Lock()
		d := w.os.inflight[i]
		w.os.mu.Unlock()
		w.os.inject(d.from, d.to, d.msg)
		w.fault(fmt.Sprintf("duplicate %c", d.kind()))
		return fmt.Sprintf("duplicate %c %s->%s", d.kind(), d.from, d.to)
	case r <= lose+2 && w.cfg.faults.dgrams:
		by := []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, simTTL}[w.rng.Intn(4)]
		d := w.os.delay(i, time.Now().Add(by))
		w.fault(fmt.Sprintf("delay %c", d.kind()))
		return fmt.Sprintf("delay %c %s->%s by %v", d.kind(), d.from, d.to, by)
	}
	d := w.os.deliver(i, false)
	w.delivered = append(w.delivered, d)
	if len(w.delivered) > 16 {
		w.delivered = w.delivered[1:]
	}
	verb := "deliver"
	if k > 0 {
		verb = "reorder" // delivered before an earlier one
		w.fault(fmt.Sprintf("reorder %c", d.kind()))
	}
	return fmt.Sprintf("%s %c %s->%s", verb, d.kind(), d.from, d.to)
}

// forge puts in flight a datagram nobody sent: a grant, a request to
// look, a registration in another process's name, or a replay.
func (w *simWorld) forge() string {
	live := w.live()
	if len(live) == 0 {
		return "forge: nobody"
	}
	to := live[w.rng.Intn(len(live))]
	other := live[w.rng.Intn(len(live))]
	var msg []byte
	var what string
	switch w.rng.Intn(4) {
	case 0:
		msg, what = encodeGrant("s", "l", nil), "grant"
	case 1:
		msg, what = encodeLook("s", "l"), "look"
	case 2:
		reg := registration{Scope: "s", Lane: "l", ID: other.id, Start: other.engine().holderStart(), PID: other.pid, Slot: other.slot,
			Arrival: w.rng.Int63n(100), TTL: simTTL.Milliseconds(), Enqueued: other.clock.Now().UnixMilli()}
		msg, what = encodeWaiting([]registration{reg}), "registration of "+other.id
	default:
		if len(w.delivered) == 0 {
			return "forge: nothing to replay"
		}
		d := w.delivered[w.rng.Intn(len(w.delivered))]
		w.os.inject(d.from, d.to, d.msg)
		return fmt.Sprintf("replay %c %s->%s", d.kind(), d.from, d.to)
	}
	w.os.inject("forger", to.id, msg)
	return fmt.Sprintf("forge %s -> %s", what, to.id)
}

// check verifies the invariants after a step.
func (w *simWorld) check(step int) {
	defer func() {
		// Only while no process holds SQLite's write lock: a grant being
		// written in a transaction still open (its process parked, or
		// stopped, inside it) took its floor from its clock when it
		// began, before this check.
		if !w.writeLocked() {
			w.checked = time.Now()
			w.lowFree = w.lowestClock()
		}
	}()
	w.checkRobbed(step)
	ctx := context.Background()
	rows, err := w.checkDB.QueryContext(ctx, `SELECT id, holder, epoch, coalesce(begin_holder, ''), coalesce(begin_epoch, 0),
		coalesce(commit_holder, ''), coalesce(commit_epoch, 0) FROM sim_writes WHERE id > ? ORDER BY id`, w.lastWrite)
	if err != nil {
		w.skipOrFail(step, err)
		return
	}
	for rows.Next() {
		var id, epoch, bEpoch, cEpoch int64
		var holder, bHolder, cHolder string
		if err := rows.Scan(&id, &holder, &epoch, &bHolder, &bEpoch, &cHolder, &cEpoch); err != nil {
			w.res.violate(step, "read write: %v", err)
			break
		}
		w.lastWrite = id
		w.res.commits++
		if holder != cHolder || epoch != cEpoch {
			w.res.violate(step, "write %d by %s at epoch %d committed while the lane's row was %q at epoch %d", id, holder, epoch, cHolder, cEpoch)
		}
		if epoch < w.lastEpoch {
			w.res.violate(step, "write %d at epoch %d committed after a write at epoch %d", id, epoch, w.lastEpoch)
		}
		w.lastEpoch = max(w.lastEpoch, epoch)
		if was, ok := w.epochHolder[epoch]; ok && was != holder {
			w.res.violate(step, "epoch %d written by %s and by %s", epoch, was, holder)
		}
		w.epochHolder[epoch] = holder
		if bEpoch != 0 && (bHolder != cHolder || bEpoch != cEpoch) { // (0: begun by the caller's own BEGIN)
			w.res.rowMoved++
			w.res.trace = append(w.res.trace, fmt.Sprintf("row moved in write %d: %s/%d at BEGIN, %s/%d at COMMIT", id, bHolder, bEpoch, cHolder, cEpoch))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		w.skipOrFail(step, err)
		return
	}
	var r simRow
	err = w.checkDB.QueryRowContext(ctx, `SELECT holder_id, epoch, heartbeat_at, ttl_ms, coalesce(holder_start, '')
		FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1`).Scan(&r.holder, &r.epoch, &r.heartbeat, &r.ttl, &r.start)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		w.checkLive(step, nil)
		return
	case err != nil:
		w.skipOrFail(step, err)
		return
	}
	w.checkLive(step, &r)
	holder, epoch := r.holder, r.epoch
	if epoch < w.rowEpoch {
		w.res.violate(step, "the active row's epoch went back from %d to %d", w.rowEpoch, epoch)
	}
	switch {
	case epoch == w.rowEpoch || epoch == w.restoredEpoch || epoch > w.issued:
	case w.chain != 0 && w.rowEpoch == w.chain && epoch == w.chain+1:
		w.chain = epoch // a hand-off along the restored row's grant (see restore)
	default:
		// A grant since the last check, after a restore, at an epoch the
		// file may have issued before it. The floor every grant but a
		// hand-off takes exceeds them when the clock of the process that
		// granted it read past them (the simulation's clocks are stepped,
		// and its time stands still between sleeps, so that epochs run
		// ahead of it): the lowest clock of a process that may have
		// granted it, when the last check ended with no write
		// transaction open (its clock then, or with the steps since),
		// tells.
		if floor := min(w.lowFree.UnixMicro(), w.lowestClock().UnixMicro()); floor > w.issued {
			w.res.violate(step, "a grant after a restore at epoch %d, at or below the %d issued before it, while every clock read %d or more",
				epoch, w.issued, floor)
		}
		w.chain = epoch // (its hand-offs count on from it)
	}
	w.rowEpoch = epoch
	can := 0
	for _, p := range w.live() {
		if l := p.engine().knownLane("s", "l"); l != nil {
			if g := l.currentRow(); g != nil && !g.lost.Load() && p.id == holder && g.epoch == epoch {
				can++
			}
		}
	}
	if can > 1 {
		w.res.violate(step, "%d processes can commit at epoch %d", can, epoch)
	}
}

// lowestClock is the lowest reading, at the end of the last check, of the
// clock of a live process or the operator (whose Break grants the lane to
// the queue's head): a grant made since read its clock there or later.
func (w *simWorld) lowestClock() time.Time {
	w.os.mu.Lock()
	defer w.os.mu.Unlock()
	low := w.checked.Add(time.Duration(w.os.operator.clock.skew.Load()))
	for _, p := range w.os.procs {
		if p != nil && !p.dead {
			if t := w.checked.Add(time.Duration(p.clock.skew.Load())); t.Before(low) {
				low = t
			}
		}
	}
	return low
}

// skipOrFail counts a check skipped because the file was busy (a
// rollback journal being written), and records any other error.
func (w *simWorld) skipOrFail(step int, err error) {
	w.unknownState()
	if isBusy(err) {
		w.res.skipped++
		return
	}
	w.res.violate(step, "checker: %v", err)
}

// stop kills every process, so that every goroutine of the run ends.
func (w *simWorld) stop() {
	w.os.mu.Lock()
	procs := append([]*simProc{w.os.operator}, w.os.procs...)
	w.os.mu.Unlock()
	if w.lockDB != nil {
		if w.locked {
			w.lockCon.ExecContext(context.Background(), "ROLLBACK")
		}
		w.lockCon.Close()
		w.lockDB.Close()
	}
	for _, p := range procs {
		if !w.os.isDead(p) {
			w.os.kill(p)
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				w.closeEngine(p.engine())
			}()
		}
	}
	w.wg.Wait()
}

// traceTail is the trace's last n lines up to and including step's
// (all of it when step is negative), for a report.
func (r *simResult) traceTail(step, n int) string {
	end := len(r.trace)
	if step >= 0 {
		for i, line := range r.trace {
			if strings.HasPrefix(line, strconv.Itoa(step)+" ") {
				end = i + 1
			}
		}
	}
	for end < len(r.trace) && !startsWithStep(r.trace[end]) { // the step's checks' own lines
		end++
	}
	return strings.Join(r.trace[max(0, end-n):end], "\n")
}

// startsWithStep reports whether a trace line is a step's (not a note).
func startsWithStep(line string) bool {
	i := strings.IndexByte(line, ' ')
	_, err := strconv.Atoi(line[:max(i, 0)])
	return i > 0 && err == nil
}

// firstViolationStep is the step of the result's first violation (-1: none).
func (r *simResult) firstViolationStep() int {
	if len(r.violations) == 0 {
		return -1
	}
	return simViolationStep(r.violations[0])
}

// simTraceLines is how many trace lines a failing run shows
// (CLEOLEASE_SIM_TRACE).
func simTraceLines(t *testing.T) int { return simEnvInt(t, "CLEOLEASE_SIM_TRACE", 40) }

// simEnvInt reads a positive integer from the environment, or def.
func simEnvInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestSimulationRecommitHole replays the seed on which the simulation
// first found a caller's own COMMIT and BEGIN taken for one transaction: a
// write committed under a lane another holder had taken in between (step
// 2938 of WAL seed 5 before Fencing.dv). It must run clean.
func TestSimulationRecommitHole(t *testing.T) {
	res := runSim(t, simConfig{seed: 5, steps: 3500, procs: 3, journal: "WAL", stops: true, recommit: true})
	for _, v := range res.violations {
		t.Error(v)
	}
}

// TestSimulation runs the simulation for a few seeds in WAL and
// rollback-journal mode and fails on any violation.
func TestSimulation(t *testing.T) {
	steps := simEnvInt(t, "CLEOLEASE_SIM_STEPS", 3000)
	recommit := os.Getenv("CLEOLEASE_SIM_RECOMMIT") != "0"
	seeds := simEnvInt(t, "CLEOLEASE_SIM_SEEDS", 2)
	for _, journal := range []string{"WAL", "DELETE"} {
		for seed := range int64(seeds) {
			t.Run(fmt.Sprintf("%s/seed%d", journal, seed), func(t *testing.T) {
				start := time.Now()
				cfg := simFull(seed, steps, journal)
				cfg.recommit = recommit
				res := runSim(t, cfg)
				el := time.Since(start)
				t.Logf("%d steps in %v (%.0f steps/s, %v simulated): %d commits, %d fenced, %d kills, %d breaks, %d rows moved inside a transaction, %d self-changes, %d checks skipped (busy), %d hand-offs inside a commit",
					steps, el.Round(time.Millisecond), float64(steps)/el.Seconds(), res.simTime.Round(time.Millisecond), res.commits, res.fenced, res.kills, res.breaks, res.rowMoved, res.self, res.skipped, res.passed)
				t.Logf("faults: %s", res.faultSummary())
				e := res.engines
				t.Logf("engines: grants=%d claims=%d (inline %d) handoffs=%d unavailable=%d lost=%d fenced=%d reclaim-dead=%d reclaim-ttl=%d dead-waiters=%d breaks=%d",
					e.Grants, e.Claims, e.InlineClaims, e.Handoffs, e.Unavailable, e.Lost, e.Fenced, e.ReclaimDead, e.ReclaimTTL, e.DeadWaiters, e.Breaks)
				for _, v := range res.violations {
					t.Error(v)
				}
				if len(res.violations) > 0 {
					t.Logf("the trace up to the first violation:\n%s", res.traceTail(res.firstViolationStep(), simTraceLines(t)))
				}
				if res.commits == 0 {
					t.Errorf("no write committed in %d steps: the simulation exercised nothing", steps)
				}
			})
		}
	}
}

// TestSimulationDeterministic runs seeds twice: the same seed must give the
// same trace. The scheduler's own choices are a function of the seed and
// of where the engines are parked; what it cannot fix is the choice the Go
// runtime makes, at random, when one of the engine's selects finds several
// channels ready (a timer that fired while its goroutine was blocked
// elsewhere, and a doorbell ring): two runs of a seed can part there. That
// is rare in the first few hundred steps (the seeds and length here never
// parted in 30 repetitions; other seeds have, after 95 steps or more).
// CLEOLEASE_SIM_DET_SEED and CLEOLEASE_SIM_DET_STEPS try others.
func TestSimulationDeterministic(t *testing.T) {
	steps := simEnvInt(t, "CLEOLEASE_SIM_DET_STEPS", 300)
	seeds := []int64{1, 2, 3}
	if os.Getenv("CLEOLEASE_SIM_DET_SEED") != "" {
		seeds = []int64{int64(simEnvInt(t, "CLEOLEASE_SIM_DET_SEED", 1))}
	}
	for _, seed := range seeds {
		cfg := simConfig{seed: seed, steps: steps, procs: 3, journal: "WAL", faults: simAllFaults, liveness: true}
		a := runSim(t, cfg)
		b := runSim(t, cfg)
		for i := range min(len(a.trace), len(b.trace)) {
			if a.trace[i] != b.trace[i] {
				t.Fatalf("seed %d, different traces at line %d:\n%s\n--\n%s", seed, i,
					strings.Join(a.trace[max(0, i-8):i+1], "\n"), strings.Join(b.trace[max(0, i-8):i+1], "\n"))
			}
		}
		if len(a.trace) != len(b.trace) {
			t.Fatalf("seed %d, traces of %d and %d lines", seed, len(a.trace), len(b.trace))
		}
		if a.commits == 0 {
			t.Fatalf("seed %d: no write committed", seed)
		}
	}
}
