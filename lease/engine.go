package lease

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/google/uuid"
)

// Options configure an Engine. Path and DSN are required.
type Options struct {
	// Path is the database file; it must exist (open a connection first).
	Path string
	// DSN opens the engine's private connection with Base (the caller's
	// DSN minus cleolease parameters, in the base's dialect). That
	// connection's busy timeout is set to 0: every lease statement is a
	// single attempt and the wait between attempts happens in Go,
	// honouring contexts (https://github.com/mattn/go-sqlite3/issues/863:
	// go-sqlite3's busy handler does not watch the context).
	DSN string
	// Base opens the engine's private connection on DSN (sqlbase.Base:
	// the connector's base driver, so that its connection-time setup runs
	// there too, without the application's callbacks). Required. Every
	// Open of one file in a process must pass a Base of the same Key
	// (ErrDriverMismatch otherwise).
	Base sqlbase.Base
	// TTL is written to ttl_ms; the heartbeat runs every TTL/3. Default 30s.
	TTL time.Duration
	// Slice is how long a holder keeps a lane for more of its own work
	// (queued at the gate, or a writer that comes straight back: turn.go)
	// while another process waits; a turn keeps at least minTurnCommits
	// commits however long they take. 0 means strict FIFO, across
	// processes and at the in-process gate (which otherwise lets a
	// returning writer barge ahead of a waiter for up to 1 ms: gate.go).
	Slice time.Duration
	// Linger is how long an idle holder keeps the row while nobody waits.
	// 0 releases at once.
	Linger time.Duration
	// SidecarDir, when not empty, is the local directory that holds the
	// engine's liveness files (the sidecar <db>-cleolease, or the
	// portable tier's <db>-cleolease.d), named there after the database's
	// file name and identity (sidecarBase), instead of beside the database:
	// for a database in a mount that accepts only database files, such as
	// LiteFS's. Every process that opens the file must give the same
	// directory (or none); the directory must exist. The engine proves it:
	// a nonce kept beside the liveness files (none beside the database:
	// its directory's identity) is recorded in the database, and a claim
	// that finds another place's recorded refuses with ErrSidecarDir
	// (sidecarproof.go).
	SidecarDir string
	// SidecarDirDerived says that SidecarDir was derived by the caller
	// (for a LiteFS mount given no _lease_sidecar_dir), not given by the
	// user: a nonce that cannot be kept there then fails Open (a given
	// directory where it cannot is left unproven), and ErrSidecarDir's
	// reason says the directory was derived.
	SidecarDirDerived bool
	// RemoteHolders says that processes of other hosts may hold the file's
	// lanes (a database on a network filesystem, opted in with
	// _lease_network_fs=allow): a row written during another boot, or
	// without a holder_start, is then never judged dead from here; only
	// Break, or StealAfterTTL once its heartbeat is older than its TTL,
	// takes its lane.
	RemoteHolders bool
	// Replicated says that the file is replicated to other hosts that may
	// become its writer (a LiteFS mount): every grant that is not a
	// hand-off by this process takes the epoch floor, so that epochs
	// handed out after a failover exceed those of the former primary,
	// even those its replicas never received (takeoverFloor); and no grant
	// is ever degraded: at the wait bound Acquire fails with
	// ErrUnavailable as with Require, since a holder that looks alive may
	// be a former primary's process, alive on another node of this host.
	Replicated bool
	// StealAfterTTL, an explicit opt-in, lets a waiter reclaim a lane whose
	// heartbeat is older than the holder's TTL even when the holder is
	// provably alive (hung). Writes stay safe (fencing); external side
	// effects of the robbed holder are not.
	StealAfterTTL bool
	// Clock is the wall clock of the lease rows' timestamps (see Clock);
	// nil means SystemClock.
	Clock Clock
	// Logger receives the engine's events (grants degraded, reclaims,
	// breaks, lost leases); nil logs nothing.
	Logger *slog.Logger
	// MemoryOnly makes an in-process-only engine (shared in-memory
	// databases): a gate per lane, no tables, no sidecar.
	MemoryOnly bool
	// TablesReady says that the caller found the lease tables complete
	// (SchemaReady) on a connection of its own just before Open. Open then
	// neither reads them nor opens the engine's connection: that
	// connection opens at the engine's first use of it (its first claim,
	// Status, Break), and the sweep of rows naming this process that Open
	// would run runs at the first Acquire instead; the doorbell, the file
	// watch and the heartbeat goroutine start at the engine's first lease
	// use too (listen.go). A process that only reads pays only for the
	// liveness lock.
	TablesReady bool
}

// Engine is the lease engine of one database file in this process.
type Engine struct {
	opts     Options
	path     string // resolved path
	base     string // where the liveness files and doorbells are named from (sidecarBase)
	dev, ino uint64
	key      string

	holderID string
	pid      int64
	start    string         // holder_start at Open (holderStart: after a move of the liveness files)
	locks    platform.Locks // nil: no liveness locks (pid and start time only)
	proof    *sidecarProof  // where the liveness files are kept (sidecarproof.go); nil: not proven
	// movedStart is holder_start once the liveness files moved
	// (followSidecar); nil before.
	movedStart atomic.Pointer[string]
	// followKick asks the heartbeat goroutine to check the liveness files
	// (kickFollow; capacity 1).
	followKick chan struct{}
	// followDue records a removal of the liveness files that the file
	// watch reported while this process had no stake in any lane: the
	// move waits for its next claim or heartbeat tick (followIfDue).
	followDue atomic.Bool
	// followMu makes followSidecar one at a time (the heartbeat goroutine
	// and a claim's followIfDue).
	followMu sync.Mutex
	conn     *leaseConnector // the connector of the engine's own connection (db)
	pinned   atomic.Int64    // 1 + conn's pin under which the identity was found (see pinsPath); 0: none
	bell     *doorbell
	turn     *writeTurn // the file's write turn (writeturn.go)

	store storePool // the pool of conn's one connection (db)
	clock Clock
	log   *slog.Logger
	stats counters

	mu     sync.Mutex
	lanes  map[laneKey]*laneState
	refs   int
	closed bool
	shut   atomic.Bool // closed, for a check without mu (isClosed)
	// lastLane is the lane lane() returned last (lanes are never removed),
	// so that a process writing one lane finds it without e.mu or a hash.
	lastLane atomic.Pointer[laneState]

	fileGone atomic.Bool // the path no longer names this engine's file
	sweeping atomic.Bool // sweepStale runs (stale.go)
	// sweepDue: Open left its sweep of stale rows (sweepStale) to the
	// first Acquire (Options.TablesReady).
	sweepDue atomic.Bool
	// schemaPending: the lease tables were missing or incomplete at Open
	// and the file refused the write that creates them (refused.go); the
	// next lease write creates them first (tryImmediate).
	schemaPending atomic.Bool
	// hbCtx ends when Close stops the heartbeat (hbStop), cutting short a
	// beat that SQLITE_BUSY holds up.
	hbCtx  context.Context
	hbStop context.CancelFunc
	wg     sync.WaitGroup
	// listening: the doorbell listens and the heartbeat goroutine runs
	// (listen.go); listenMu orders its start; lateStats counts the
	// unwatched identity checks before it (statUnwatched).
	listening atomic.Bool
	listenMu  sync.Mutex
	lateStats atomic.Int32

	// hook injects faults in tests: consulted by fault before each named
	// lease statement (see immediateOp); nil in production.
	hook atomic.Pointer[func(op string) error]

	// os is where the engine gets its operating-system pieces (the real
	// ones in production; see osSeams).
	os osSeams
}

// osSeams are the operating-system pieces an Engine is built from: its
// holder identity, its liveness evidence, its datagram doorbell and its
// file and exit watches. Open uses the real ones (realSeams); a test gives
// an engine simulated ones to run several independent engines, each its
// own process as far as the protocol can tell, in one test process.
type osSeams struct {
	holderID string // the engine's holder id
	pid      int64  // the pid its rows record
	// shared says that the engine is this process's engine of its file
	// (registered, so that every Open of the file shares it).
	shared     bool
	openLocks  func(base string, mode os.FileMode, slot int64) (platform.Locks, error)
	listenBell func(base, holderID string, file platform.FileID) (platform.Bell, error)
	watchFiles func(sidecar, dbPath string, changed func()) (platform.FileWatch, error)
	watchExit  func(pid int64, exited func()) (stop func(), err error)
	// holes are the holes a test puts back (none in realSeams).
	holes holes
}

// realSeams are the operating system's own pieces, for this process.
func realSeams() osSeams {
	return osSeams{
		holderID: processHolderID, pid: int64(os.Getpid()), shared: true,
		openLocks: func(base string, mode os.FileMode, slot int64) (platform.Locks, error) {
			return openLocks(base, mode, slot)
		},
		listenBell: platform.ListenBell, watchFiles: platform.WatchFiles, watchExit: platform.WatchExit,
	}
}

type laneKey struct{ scope, lane string }

// processHolderID identifies this process in every lease file it touches.
var processHolderID = "cl-" + uuid.NewString()

var (
	registryMu sync.Mutex
	registry   = map[string]*Engine{}
	memCounter int
)

// FileKey resolves path to the identity the engine is shared by: the
// symlink-free absolute path plus device and inode.
func FileKey(path string) (resolved string, dev, ino uint64, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", 0, 0, err
	}
	resolved, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", 0, 0, err
	}
	fi, err := platform.Stat(resolved)
	if err != nil {
		return "", 0, 0, err
	}
	return resolved, fi.ID.Dev, fi.ID.Ino, nil
}

// Open returns the engine of the file at opts.Path, creating it on first
// use in this process (bootstrapping the lease tables, unless the file
// refuses writes: then the first lease write creates them, see
// refused.go) and counting a reference otherwise. Each Open must be paired with Close. Errors:
// ErrIndexMissing (tampered tables), ErrFileChanged, ErrDriverMismatch,
// ErrNoBase (opts.Base is nil), ErrTierConflict, ErrLockingConflict
// (another process's SQLite file locks do not exclude this one's:
// locking.go), ErrSidecarDir, or the SQLite / file system error that
// prevented it, wrapped in *Error.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	return openWith(ctx, opts, realSeams())
}

// openWith is Open with the operating-system pieces seams. An engine whose
// seams are not shared is never registered: each such open makes a new
// engine, which Close ends.
func openWith(ctx context.Context, opts Options, seams osSeams) (*Engine, error) {
	if opts.Base == nil {
		return nil, &Error{Op: "open", Path: opts.Path, Err: ErrNoBase}
	}
	if opts.TTL <= 0 {
		opts.TTL = 30 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	var key, resolved string
	var dev, ino uint64
	if opts.MemoryOnly {
		key = "mem:" + opts.Path
		resolved = opts.Path
	} else {
		var err error
		resolved, dev, ino, err = FileKey(opts.Path)
		if err != nil {
			return nil, &Error{Op: "open", Path: opts.Path, Err: fmt.Errorf("%w: %v", ErrFileChanged, err)}
		}
		key = fmt.Sprintf("%d:%d", dev, ino)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if e := registry[key]; e != nil && seams.shared {
		if e.opts.Base.Key() != opts.Base.Key() {
			return nil, &Error{Op: "open", Path: resolved, Err: ErrDriverMismatch,
				Reason: "this process already opened the file with another base driver; the engine's connection runs the first one's ConnectHook"}
		}
		e.mu.Lock()
		e.refs++
		e.mu.Unlock()
		return e, nil
	}
	e := &Engine{
		opts: opts, path: resolved, dev: dev, ino: ino, key: key,
		holderID: seams.holderID, pid: seams.pid, start: procIdentity(),
		clock: opts.Clock, log: opts.Logger,
		lanes: map[laneKey]*laneState{}, refs: 1, os: seams, followKick: make(chan struct{}, 1),
	}
	e.turn = newWriteTurn(e.kernelTurn)
	e.hbCtx, e.hbStop = context.WithCancel(context.Background())
	if f := openHook; f != nil {
		e.setHook(f)
	}
	if !opts.MemoryOnly {
		if err := e.openStore(ctx); err != nil {
			e.hbStop()
			return nil, err
		}
		if !opts.TablesReady {
			e.listen(false)
		}
		// Rows that name this process in a file it just opened are not its
		// grants (stale.go). Briefly: Open holds the registry, and a row
		// left for now is taken over by its claim (handedToUs) or swept
		// when a waiter registers for its lane.
		//
		// A file on which this process's last engine left a row at Close
		// (leftRows) is swept here whatever TablesReady says: an engine
		// that neither listens nor sweeps would leave that row to stall
		// every waiter, since this process holds its liveness lock again.
		if _, left := leftRows.LoadAndDelete(e.leftKey()); opts.TablesReady && (!left || seams.holes.noLeftRowSweep) {
			e.sweepDue.Store(true)
		} else {
			e.sweepOpen(ctx)
		}
	}
	if seams.shared {
		registry[key] = e
	}
	return e, nil
}

// leftRows holds the files (leftKey) on which the last Close of this
// process's engine left a row naming the process: a release or hand-off
// at close that failed (the write lock not free within its bound). The
// next Open of the file sweeps at once (sweepOpen).
var leftRows sync.Map

// leftKey is e's entry in leftRows: its holder id and file key (one
// holder id per process; the simulation runs several in one).
func (e *Engine) leftKey() string { return e.holderID + "\x00" + e.key }

// sweepOpen is Open's sweep of rows naming this process (sweepStale),
// bounded by a second.
// sweepIfDue runs Open's sweep (sweepOpen) if Open left it to the first
// lease use and nobody has run it since.
func (e *Engine) sweepIfDue(ctx context.Context) {
	if e.sweepDue.Load() && e.sweepDue.CompareAndSwap(true, false) {
		e.sweepOpen(ctx)
	}
}

func (e *Engine) sweepOpen(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	e.sweepStale(sctx)
	cancel()
}

// openHook, when set (by tests only), is the fault hook every new engine
// starts with (see setHook), so that a test can inject errors into the
// statements Open runs.
var openHook func(op string) error

// openLocks opens the liveness evidence (platform.OpenLocks; tests give
// it another OS's answers).
var openLocks = platform.OpenLocks

func (e *Engine) openStore(ctx context.Context) error {
	mode := os.FileMode(0o644)
	if fi, err := platform.Stat(e.path); err == nil {
		mode = fi.Mode
	}
	base := sidecarBase(e.path, e.dev, e.ino, e.opts.SidecarDir)
	e.base = base
	locks, err := e.os.openLocks(base, mode, slotFor(e.holderID))
	if errors.Is(err, platform.ErrTierConflict) {
		return &Error{Op: "open", Path: e.path, Err: ErrTierConflict,
			Reason: "build every program that shares the file with the same cleolease_portable build tag"}
	}
	if errors.Is(err, platform.ErrLocksIgnored) {
		return &Error{Op: "open", Path: e.path, Err: ErrSidecarDir,
			Reason: err.Error() + ": a live holder would look dead there (LiteFS, another FUSE mount or a network share); set _lease_sidecar_dir to a local directory that every process of the host gives"}
	}
	if err != nil {
		return &Error{Op: "open", Path: e.path, Err: err}
	}
	if err := e.announceLocking(locks); err != nil {
		locks.Close()
		return err
	}
	e.locks = locks
	if e.proof, err = e.newProof(base, mode); err != nil {
		if locks != nil {
			locks.Close()
		}
		return &Error{Op: "open", Path: e.path, Err: err}
	}
	mark := ""
	if locks != nil {
		mark = locks.Mark()
	}
	e.start += "/" + mark + "/" + platform.UID() // see holderStart
	e.bell = newDoorbell(e.os, locks, base, e.path, e.holderID, platform.FileID{Dev: e.dev, Ino: e.ino}, e.registration, e.grantArrived, e.lookArrived, e.answerQuery)
	e.bell.onDBChange = e.dbFileChanged // a removal silences the doorbell (markFileGone)
	e.conn = &leaseConnector{dsn: e.opts.DSN, base: e.opts.Base}
	e.store.conn = e.conn
	if e.opts.TablesReady {
		return nil // (the pool is made, and connects, at the first use)
	}
	err = e.bootstrap(ctx)
	if WriteRefused(err) {
		// A LiteFS replica, say: open for reads, create the tables at the
		// first lease write (which the file refuses too, until it takes
		// writes).
		e.schemaPending.Store(true)
		e.logf(slog.LevelDebug, "cleolease: the file refuses writes; the lease tables will be created by the first lease write", "err", err.Error())
		err = nil
	}
	if err != nil {
		e.store.close()
		e.bell.close()
		if e.locks != nil {
			e.locks.Close()
		}
		var le *Error
		if errors.As(err, &le) {
			return err
		}
		return &Error{Op: "open", Path: e.path, Err: err}
	}
	return nil
}

// newProof is the token of where this engine keeps its liveness files
// (sidecarproof.go): the nonce file of its sidecar directory, or the
// identity of the database's directory for the sidecar beside it. A
// given directory where the nonce cannot be kept (read-only to this
// process) leaves the engine unproven, as before; a derived one fails
// Open, as before.
func (e *Engine) newProof(base string, mode os.FileMode) (*sidecarProof, error) {
	if e.opts.SidecarDir == "" {
		p, err := newBesideProof(e.path)
		if err != nil {
			e.logf(slog.LevelWarn, "cleolease: no token for the sidecar beside the database: processes keeping their liveness files elsewhere will not be refused", "err", err)
			return nil, nil
		}
		return p, nil
	}
	p, err := newSidecarProof(base, mode)
	if err != nil && !e.opts.SidecarDirDerived {
		e.logf(slog.LevelWarn, "cleolease: no sidecar nonce in the sidecar directory: processes keeping their liveness files elsewhere will not be refused", "err", err)
		return nil, nil
	}
	return p, err
}

// sidecarBase is the path the liveness files are named after: the
// database's own path, or, with a sidecar directory, a name in it made of
// the database's file name and a hash of its resolved path, device and
// inode (so that two databases of one name never share liveness files).
func sidecarBase(path string, dev, ino uint64, dir string) string {
	if dir == "" {
		return path
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d:%d", path, dev, ino)))
	return filepath.Join(dir, filepath.Base(path)+"-"+hex.EncodeToString(sum[:6]))
}

// Path is the resolved path of the engine's file.
func (e *Engine) Path() string { return e.path }

// HolderID is this process's holder id (the holder_id of its rows).
func (e *Engine) HolderID() string { return e.holderID }

// CheckFile reports ErrFileChanged when the engine's path no longer names
// the file it was opened on (renamed over, deleted). It always stats.
func (e *Engine) CheckFile() error { return e.checkFile(true) }

// FileChanged is CheckFile at the cost of an atomic load while the file
// watch (inotify, on Linux) reports nothing about the file (a stat
// otherwise): for a check on every statement.
func (e *Engine) FileChanged() error { return e.checkFile(false) }

// checkFile with always false trusts the file watch: it stats only after
// the kernel reported a rename, unlink or link-count change of the file
// (or when there is no watch, as in the portable tier). Acquire uses it on the fast path; a claim
// always stats.
// dbFileChanged is the file watch's report of a change of the database
// file, on the watch's goroutine: a file gone or replaced silences the
// doorbell at once (markFileGone), and the callers' next check reports
// it. One stat (platform.Stat: not the seams checkFile reads, which tests
// set from their own goroutine).
func (e *Engine) dbFileChanged() {
	if e.opts.MemoryOnly || e.fileGone.Load() {
		return
	}
	fi, err := platform.Stat(e.path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && (fi.ID.Dev != e.dev || fi.ID.Ino != e.ino) {
		e.markFileGone()
	}
}

// markFileGone records that the engine's database file is gone or
// replaced (checkFile), and silences its doorbell, named after the file's
// inode, which a new file may reuse (doorbell.silence).
func (e *Engine) markFileGone() {
	if !e.fileGone.Swap(true) && e.bell != nil {
		e.bell.silence()
	}
}

func (e *Engine) checkFile(always bool) error {
	if e.opts.MemoryOnly {
		return nil
	}
	if e.fileGone.Load() {
		// Sticky: once replaced, always replaced (even if the kernel's
		// event about it has not been read yet).
		return &Error{Op: "check", Path: e.path, Err: ErrFileChanged, Reason: "detected earlier"}
	}
	if !always && e.bell != nil && e.bell.dbWatched() && !e.bell.dbChanged() {
		return nil
	}
	e.statUnwatched()
	var gen int64
	var open bool
	if pinsPath && e.conn != nil {
		gen, open = e.conn.pin()
		if open && e.pinned.Load() == gen+1 {
			return nil
		}
	}
	fi, err := statFile(e.path)
	if errors.Is(err, fs.ErrNotExist) {
		e.markFileGone()
		return &Error{Op: "check", Path: e.path, Err: ErrFileChanged, Reason: err.Error()}
	}
	if err != nil {
		// Not proof of another file (under Wine, a loaded process's stat
		// failed with "too many open files"): this check fails, the next
		// one stats again.
		return &Error{Op: "check", Path: e.path, Err: err}
	}
	if fi.ID.Dev != e.dev || fi.ID.Ino != e.ino {
		e.markFileGone()
		return &Error{Op: "check", Path: e.path, Err: ErrFileChanged,
			Reason: fmt.Sprintf("inode %d is now %d", e.ino, fi.ID.Ino)}
	}
	if e.bell != nil {
		e.bell.clearDB() // a chmod or touch: same file
	}
	if open {
		// The engine's connection was open before this stat found the
		// file the engine opened, and is open now: pinned while it stays
		// open (see pinsPath).
		if g, still := e.conn.pin(); still && g == gen {
			e.pinned.Store(gen + 1)
		}
	}
	return nil
}

// pinsPath is platform.OpenFilePinsPath (tests give it Windows' answer):
// where a file SQLite holds open cannot be removed, renamed or replaced,
// the identity checkFile finds while the engine's connection (which SQLite
// opened on e.path, resolved) is open stays true until that connection
// closes, so checkFile stats only once per connection. On Windows
// SQLite's win32 VFS opens the database with FILE_SHARE_READ |
// FILE_SHARE_WRITE, without FILE_SHARE_DELETE (winOpen in go-sqlite3's
// sqlite3-binding.c), so DeleteFile, MoveFileEx and ReplaceFile on that
// path fail while the handle is open; without this, each Acquire paid
// CreateFile, GetFileInformationByHandle and a stat (Windows has no file
// watch here).
var pinsPath = platform.OpenFilePinsPath

// statFile is platform.Stat (tests count the calls).
var statFile = platform.Stat

// Close drops one reference; the last one hands over or releases every
// lane this process holds, removes its queue rows, stops the heartbeat,
// closes the private connection and drops the liveness lock.
func (e *Engine) Close() error {
	registryMu.Lock()
	e.mu.Lock()
	e.refs--
	last := e.refs == 0
	if last {
		e.closed = true
		e.shut.Store(true)
		if registry[e.key] == e {
			delete(registry, e.key)
		}
	}
	lanes := make([]*laneState, 0, len(e.lanes))
	for _, l := range e.lanes {
		lanes = append(lanes, l)
	}
	e.mu.Unlock()
	registryMu.Unlock()
	if !last {
		return nil
	}
	left := false
	for _, l := range lanes {
		l.shutdown()
		left = left || l.rowLeft()
	}
	if left && !e.opts.MemoryOnly {
		leftRows.Store(e.leftKey(), struct{}{})
	}
	e.hbStop()
	e.wg.Wait()
	e.turn.close()
	err := e.store.close()
	if e.bell != nil {
		e.bell.close()
	}
	if e.locks != nil {
		if cerr := e.locks.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// knownLane returns the lane's state if this process has used the lane,
// else nil; a datagram never creates one.
func (e *Engine) knownLane(scope, lane string) *laneState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lanes[laneKey{scope, lane}]
}

func (e *Engine) lane(scope, lane string) *laneState {
	if l := e.lastLane.Load(); l != nil && l.scope == scope && l.lane == lane {
		return l
	}
	k := laneKey{scope, lane}
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.lanes[k]
	if l == nil {
		l = newLane(e, scope, lane)
		// A lane first used after Close is closed from the start (Close
		// shut down the lanes it knew): its Acquire fails with ErrClosed.
		l.closing = e.closed
		e.lanes[k] = l
	}
	e.lastLane.Store(l)
	return l
}

// isClosed reports whether the last Close has run (or is running), at the
// cost of an atomic load.
func (e *Engine) isClosed() bool { return e.shut.Load() }

func (e *Engine) errf(op, scope, lane string, err error, reason string) *Error {
	return &Error{Op: op, Path: e.path, Scope: scope, Lane: lane, Err: err, Reason: reason}
}

func (e *Engine) nowMS() int64 { return e.clock.Now().UnixMilli() }

// logf logs msg at level with the file's path and args, when the logger
// takes that level (the check comes first: debug records are made on the
// hot path, and the connector's default logger drops them).
func (e *Engine) logf(level slog.Level, msg string, args ...any) {
	if e.log != nil && e.log.Enabled(context.Background(), level) {
		e.log.Log(context.Background(), level, msg, append([]any{"path", e.path}, args...)...)
	}
}

// isBusy reports SQLITE_BUSY / SQLITE_LOCKED: transient, retried.
func isBusy(err error) bool { return sqlbase.IsBusy(err) }

// immediate runs fn inside BEGIN IMMEDIATE on the engine's connection and
// commits. BEGIN is retried on SQLITE_BUSY with a capped back-off until ctx
// ends; the body and COMMIT run detached from ctx so a cancellation can
// never leave an ambiguous commit: fn gets that detached context (which
// has no Done channel, so database/sql starts no watcher goroutine per
// statement). If fn fails the transaction rolls back.
func (e *Engine) immediate(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	return e.immediateOp(ctx, "begin", fn)
}

// immediateOp is immediate for the lease statement named op ("claim",
// "handoff", "dequeue", "heartbeat", "break", "bootstrap"), which names
// it to the fault hook: op before BEGIN, op+"/commit" before COMMIT (an
// injected error there rolls the transaction back).
func (e *Engine) immediateOp(ctx context.Context, op string, fn func(ctx context.Context, c *sql.Conn) error) error {
	bo := backoff{min: 20 * time.Microsecond, max: time.Millisecond}
	for {
		err := e.tryImmediate(ctx, op, fn)
		if err == nil || !isBusy(err) {
			return err
		}
		if err := bo.sleep(ctx, nil); err != nil {
			return err
		}
	}
}

// tryImmediate is one attempt of immediateOp. When the lease tables were
// dropped since the engine created them (missingTable), it recreates them
// and tries once more; when Open could not create them (schemaPending), it
// creates them first.
func (e *Engine) tryImmediate(ctx context.Context, op string, fn func(ctx context.Context, c *sql.Conn) error) error {
	return e.tryImmediateKeep(ctx, op, nil, fn)
}

// tryImmediateKeep is tryImmediate whose committed transaction keeps the
// file's write turn for this process's next writer (writeTurn.keep) when
// fn set *keep: a claim that granted the lane to a writer about to begin
// its own transaction, which would otherwise wait for the turn again.
func (e *Engine) tryImmediateKeep(ctx context.Context, op string, keep *bool, fn func(ctx context.Context, c *sql.Conn) error) error {
	if op != "bootstrap" && e.schemaPending.Load() {
		if err := e.bootstrap(ctx); err != nil {
			return err
		}
		e.schemaPending.Store(false)
	}
	err := e.tryImmediateOnce(ctx, op, keep, fn)
	if op != "bootstrap" && missingTable(err) {
		if err := e.recreate(ctx); err != nil {
			return err
		}
		err = e.tryImmediateOnce(ctx, op, keep, fn)
	}
	for errors.Is(err, errSidecarPending) {
		// Another nonce recorded, which the processes of this directory
		// may still replace with ours (sidecarproof.go): wait for them,
		// outside the transaction, then decide again.
		if werr := e.awaitMovers(ctx); werr != nil {
			return werr
		}
		err = e.tryImmediateOnce(ctx, op, keep, fn)
	}
	return err
}

func (e *Engine) tryImmediateOnce(ctx context.Context, op string, keep *bool, fn func(ctx context.Context, c *sql.Conn) error) error {
	if err := e.fault(op); err != nil {
		return err
	}
	// Never touch a file that was renamed over or deleted: its journal and
	// WAL names are now the new file's, and even taking a read lock on the
	// old inode can play the new file's (hot-looking) journal back into it.
	if err := e.checkFile(false); err != nil {
		return err
	}
	// The write turn first, as for every leased write transaction: the
	// caller's transactions of other lanes are then waited for in the
	// kernel, not by polling SQLite's write lock.
	t, err := e.turn.take(ctx, engineTurnLocal, -1)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if committed && keep != nil && *keep {
			e.turn.keep(t)
			return
		}
		t.End()
	}()
	if keep != nil {
		*keep = false
	}
	c, err := e.db().Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	bg := context.WithoutCancel(ctx)
	if _, err := c.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := e.proveSidecar(bg, op, c); err != nil {
		c.ExecContext(bg, "ROLLBACK")
		return err
	}
	if err := fn(bg, c); err != nil {
		c.ExecContext(bg, "ROLLBACK")
		return err
	}
	if err := e.fault(op + "/commit"); err != nil {
		c.ExecContext(bg, "ROLLBACK")
		return err
	}
	if _, err := c.ExecContext(bg, "COMMIT"); err != nil {
		c.ExecContext(bg, "ROLLBACK")
		return err
	}
	committed = true
	e.stats.LeaseWrites.Add(1)
	return nil
}

// fault returns the error the test hook injects into lease statement op,
// or nil (always nil in production, where no hook is set).
func (e *Engine) fault(op string) error {
	if f := e.hook.Load(); f != nil {
		return (*f)(op)
	}
	return nil
}

// setHook installs (or, with nil, removes) the fault hook.
func (e *Engine) setHook(f func(op string) error) {
	if f == nil {
		e.hook.Store(nil)
		return
	}
	e.hook.Store(&f)
}

// retryBusy runs the read fn again while it fails with SQLITE_BUSY (with a
// rollback journal a reader is refused while another connection commits;
// the engine's connection has busy_timeout 0), with a capped back-off,
// until ctx ends.
func (e *Engine) retryBusy(ctx context.Context, fn func() error) error {
	bo := backoff{min: 20 * time.Microsecond, max: time.Millisecond}
	for {
		err := fn()
		if err == nil || !isBusy(err) {
			return err
		}
		if serr := bo.sleep(ctx, nil); serr != nil {
			return serr
		}
	}
}

// goTracked runs fn on a goroutine that Close waits for, and reports
// true; once the engine is closing it starts nothing and reports false
// (Close waits for the goroutines it tracks, and adds none after that).
func (e *Engine) goTracked(fn func()) bool {
	e.mu.Lock()
	ok := !e.closed
	if ok {
		e.wg.Add(1)
	}
	e.mu.Unlock()
	if ok {
		go func() {
			defer e.wg.Done()
			fn()
		}()
	}
	return ok
}
