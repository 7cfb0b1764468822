// Package lease is cleolease's writer-lease engine: one cross-process writer
// lease per (scope, lane) of an SQLite file, kept in the file's own
// _writer_leases and _writer_queue tables, so that the fencing check runs
// in the same SQLite transaction as the data it protects.
//
// An Engine belongs to one database file (resolved path plus device and
// inode) in one process; every connector on that file shares it (Open is
// reference counted). It owns a private SQLite connection used only for
// lease bookkeeping — claim, hand-off, heartbeat, queue changes, release —
// each in its own short BEGIN IMMEDIATE with busy_timeout 0, the waiting
// done in Go so that contexts are honoured. On the caller's connection it
// only ever runs statements inside the caller's write transaction, at
// points the caller chooses, and never commits that transaction
// itself: the fencing reads right after BEGIN IMMEDIATE
// and just before COMMIT (Hold.FenceBegin, Fencing.Check); the grant of
// the next holder, written just before COMMIT when the turn ends
// (Fencing.Pass: one guarded UPDATE of the lane's row, which commits or
// rolls back with the caller's data); the read that confirms a grant
// right after the BEGIN IMMEDIATE it opens through the caller's
// AcquireOptions.Confirm — the one transaction it also rolls back, when
// the row does not confirm the grant; and, through an InlineConfirmer,
// the claim of a lane nobody holds, wants or queues for, written right
// after the BEGIN IMMEDIATE it opens there (rolled back, with nothing
// written, when the lane turns out not to be free), and its release just
// before COMMIT (Fencing.EndInline), so that a process's lone write is
// one SQLite transaction, as without the lease. A caller whose connection
// may carry user callbacks (an update hook would see the lease row) calls
// neither Pass nor offers an InlineConfirmer.
//
// # The protocol
//
// A writer calls Acquire and gets a Hold. Within a process, the writers of
// a lane first pass the lane's gate, in arrival order, so that they never
// fight in SQLite's busy handler. The first of them makes sure this process
// has the lane's row: if the process already holds it (lingering, or within
// its slice) the hold is granted at once; otherwise the process claims it.
// A lane that is free — no active row, no queue row, no want byte, and
// SQLite's write lock free now — is claimed inside the caller's own
// transaction when the caller offers one (inline.go): the grant is seen by
// nobody until that transaction commits, and the commit either keeps the
// row (more of this process's work follows) or releases it with the data.
// A claim takes a free lane at once, or waits: it announces that it wants
// the lane (its want byte), registers with the live holder by datagram
// (its registration: id, priority, arrival, place in line), and after a
// while, or when the holder cannot be reached, writes its own queue row.
// It finds the holder by reading the lane's row — unless this process has
// just handed the lane on inside a commit: then it registers with the
// holder that commit granted, without a read (claim.go, ringPassed).
//
// When the holder's last hold ends and another process waits, the holder
// hands the lane off: it orders the waiters (queue rows and
// registrations: lower priority first, FIFO within a priority, with aging,
// dead waiters skipped), rewrites the lane's row for the first live one
// with epoch + 1, and commits; then it rings that waiter's doorbell with
// the grant, carrying the registrations it did not serve. In the common
// case — the turn ends with a data commit, the first waiter registered
// and nobody wrote a queue row — the rewrite is part of that data
// transaction, just before its COMMIT, after the fencing check, guarded by
// (holder, epoch) and an empty queue (pass.go): one SQLite write
// transaction, not two. A COMMIT that fails, or whose outcome is unknown,
// rolls the grant back with the data, or not: the holder reads the row
// again on its own connection before anything else, and still holds the
// lane, has handed it on, or has lost it, as the row says. Otherwise the
// hand-off is its own BEGIN IMMEDIATE on the engine's connection
// (handoff.go). A waiter that learns nothing looks again after a bounded
// poll, so a lost datagram costs time, never safety. Nor does it strand a
// grant: every transaction that grants a waiter the lane tests the
// waiter's want byte inside it, and a waiter that gives up releases its
// byte first, so at most the one hand-off that tested it just before may
// still grant it the lane. Its lane then settles (settle.go) without
// waiting for any message: it reads the row until it has taken SQLite's
// write lock once, or seen the row move on from what it read when it
// quit, and a row that names this process is adopted, and handed on or
// released by the linger watcher.
//
// Lanes meet at SQLite's one write lock, which orders nobody: so every
// write transaction under a Hold, and each of the engine's own lease
// transactions, also takes the file's write turn (writeturn.go) just
// before its BEGIN IMMEDIATE and drops it when it ends — one exclusive
// kernel lock per file (platform.Turn), behind one owner per process, with
// one uninterruptible kernel wait per process that a writer whose context
// ends leaves to the next. Lock order: the lane, then the turn; nobody
// waits for a lane while holding the turn (an inline claim only tries
// it). A writer of another lane thus waits in the kernel and wakes when
// the transaction ends, instead of polling in SQLite's busy handler.
//
// When the turn ends is the turn's business (turn.go). Within its slice
// (Options.Slice, counted from the grant) a holder keeps the lane for
// more of this process's work while another process waits: writers
// queued at the gate, or a writer expected straight back — one whose last
// arrival came within returnGrace of a release, as a loop of transactions
// does. A turn keeps at least minTurnCommits commits while such work
// follows, even past the slice (where one commit outlasts the slice, a
// LiteFS mount's, say); a slice of 0 is strict FIFO. A commit that keeps
// the turn writes no grant; once its hold ends, the linger watcher waits
// returnGrace for that writer and then hands the lane off on the engine's
// connection, and a writer that did not come back makes the next turn
// hand over inside its commit again. A commit that ends the turn carries
// the grant itself when it can (see above).
//
// The grant datagram is a hint, never trusted for exclusion. A waiter
// whose caller will write at once (AcquireOptions.Confirm) opens the
// caller's BEGIN IMMEDIATE on it and reads the lane's row there, under
// SQLite's write lock: if the row names this process, the grant is
// confirmed in the very transaction that will carry the writes (nobody
// can change the row until it ends); if not — a forged, stale or early
// datagram — it rolls back and goes on waiting. Neither the caller's
// statements nor Hold.Epoch ever run on an unconfirmed grant.
//
// A write made under a Hold checks, inside its own transaction, right
// after BEGIN IMMEDIATE and again just before COMMIT, that its (holder,
// epoch) is still the active row (Fencing): a holder that lost the lane —
// broken, taken over, its row deleted by another connection — rolls back,
// and the error names which. A row that was active at BEGIN and is gone at
// COMMIT was removed by the transaction itself (it holds SQLite's write
// lock in between): that transaction commits, and the grant ends — unless
// the connection's data version moved in between (both reads return PRAGMA
// data_version, which only another connection's commit changes): then the
// caller ended the checked transaction and began another itself, and the
// changed row is a loss like any other.
// A holder that died is recognised from its lifetime lock (liveness.go), or
// from its pid and start time when no lock can be tested, and its lane is
// reclaimed at epoch + 1 without waiting out a TTL; a holder that is alive
// but hung is never robbed, unless the opt-in StealAfterTTL says so. A
// holder whose liveness this process cannot tell — the OS will not say
// (hidden from this process, access denied), or it runs in another pid
// namespace (a container sharing the volume) and its liveness lock cannot
// be tested from here — is never taken for dead: its lane is reclaimed
// only once its heartbeat is older than its TTL.
//
// # What the engine guarantees
//
// Safety: a commit made under a Hold carries the (holder, epoch) that is
// the lane's active row when it commits (the fencing reads run in that
// very transaction, on the file's own tables: every statement names
// main., so a TEMP table of the same name changes nothing), and epochs
// never repeat. It rests on SQLite's write lock alone, whatever the
// clocks, datagrams, liveness evidence or sidecar files say.
//
// Liveness: while some live process waits for a lane and no process
// holds it — no Hold, no commit of the lane in progress; a row that
// lingers after its hold ended, or that names a process which does not
// know it holds it, counts as idle — a waiter is granted the lane within
// IdleBound (1 s). Each way a grant could be missed has a poll behind
// it, none of them waiting for a message: a claim reads the row every
// fallbackPoll (5 ms), or registeredPoll (50 ms) while the live holder
// has its registration; it writes its own queue row after
// selfEnqueueAfter (100 ms) unless the lane is handed on to another
// holder meanwhile; a holder that releases with a waiter it cannot name
// leaves the lane free for it; a claim that gave up settles its lane
// (settle.go) within registeredPoll of the end of the one transaction
// that may still grant it; a failed receive loop is restarted. The bound
// assumes what the engine cannot provide:
//   - the processes run: a stopped process keeps what it holds until it
//     resumes, or until its heartbeat is older than its TTL and the
//     opt-in StealAfterTTL or a Break takes the lane;
//   - liveness can be told: a holder whose liveness cannot be (see above)
//     keeps its lane until its heartbeat is older than its TTL, and the
//     bound counts from then;
//   - every process sees the liveness files: after the sidecar was
//     removed or replaced, the bound counts from when the holder moves
//     to the new file — at its next lease use once its file watch
//     reported the removal (Linux; the report itself creates nothing, so
//     that a directory being removed whole is not given a new sidecar),
//     at once when a waiter that opened the new file registers with it,
//     and otherwise at its next heartbeat, within TTL/3
//     (sidecarfollow.go);
//   - SQLite's write lock is not kept longer by writers that take no
//     lease, and the file stays where the engine opened it.
//
// The simulation (sim_test.go, sim_live_test.go) checks both, under lost,
// delayed, duplicated and forged datagrams, waiters that give up at any
// step, failing receive loops, replaced sidecars and liveness that cannot
// be told; the chaos ledger (chaos/) checks the idle bound between real
// processes.
//
// # The lease tables in the user's database
//
// The tables live in the user's file, where tools that walk the schema
// meet them: golang-migrate's Drop drops every table, an application may
// empty every table in one transaction, an export may skip them. A
// transaction that drops or empties them commits (Fencing); the engine
// recreates the tables, with their indexes, the next time it needs them
// (tryImmediate, when SQLite says "no such table"), and reads a missing
// table as a lane without a row. _writer_queue has no AUTOINCREMENT, so the
// lease tables never create sqlite_sequence, which SQLite refuses to drop.
//
// Epochs must keep increasing across the loss of the rows that carried
// them, so the next epoch needs a floor that does not live in the dropped
// table. Kept in memory alone (the highest epoch this process has seen),
// it would not reach another process; kept in another table or in the
// database header, the same tools would drop or rewrite it; kept in the
// sidecar, it would not reach another host sharing the file (a LiteFS
// cluster) and would go with the sidecar, which the last process removes.
// The floor is therefore the wall clock, in microseconds since the Unix
// epoch, with this process's high-water mark on top: a lane whose row has
// to be inserted — a new lane, or one whose rows or tables were deleted —
// starts at max(highest remaining epoch + 1, clock, high-water mark + 1),
// and so does every other grant but a hand-off (below). Epochs issued that
// way never run ahead of the clock that issued them (a grant is an SQLite
// write transaction: far more than a microsecond), so an epoch taken after
// the loss exceeds every earlier one provided the clock reading it is not
// behind the clock that issued them: on one host, unless the wall clock is
// stepped back (by more than the time since the last grant; within one
// process the high-water mark covers even that); across hosts, when their
// clocks differ by less than the time between the last grant of one and
// the first of the other. See epochMemory.floor in epochs.go.
//
// A copy of the file that missed the last grants (a LiteFS replica
// promoted before they arrived; a file that lost its last commits at a
// power loss; a backup restored over the file, or a copy opened beside
// it) would hand out its row's epoch + 1 again. So every grant but a
// hand-off — a live holder rewriting the row it holds for a waiter, in
// its own transaction — takes the floor: a claim of a free lane, the
// reuse of a released row, a reclaim, a grant to the queue's head over a
// dead holder's row. After a failover or a restore the first grant of
// every lane is one of these, never a hand-off (the row a live holder
// holds is the one it wrote on this file; a restored row that names a
// process is never taken as handed to it, see below), so it exceeds every
// epoch issued before, under the same clock bound.
//
// A restored file may also bring back rows that name processes still
// running (holder ids are per process), on this file or on another (the
// original of a copy). A row that names this process is its grant only
// when a claim of it saw the lane free or another process's and then the
// row named it at a higher epoch than any it has seen (claimRun.handedToUs);
// any other such row is taken over at the floor by its claim, released by
// its settle when a waiter registers with it or its own grant is found
// lost, and released when an engine opens the file, at every heartbeat,
// or when a waiter registers for a lane it never used (stale.go). A
// holder alive by its pid whose liveness lock is in other liveness files
// than this process's and whose doorbell on this file refuses a datagram
// (on Linux a doorbell is named after the file's inode) runs on another
// file, and is reclaimed as dead (reclaimable). So is one alive on this
// file whose doorbell refused a waiter's registration: its engine here
// does not listen — it opened with TablesReady and has used no lease
// since, and nothing names a process before it listens (listen.go; an
// inline grant the caller's own COMMIT exposes listens first,
// Hold.Exposing) — so the row is not its grant (a restore brought it
// back, or its last engine left it at Close; an engine reopened in a
// process that left a row sweeps it at Open, leftRows). Only rows a
// cleolease engine wrote (with holder_start and holder_slot): the
// original implementation's processes have no doorbell.
//
// A replicated file (Options.Replicated: a LiteFS mount) never makes a
// degraded grant either: a holder that looks alive may be a former
// primary's process on another node of this host (see takeover.go).
//
// # How a lane is built
//
// Each lane of an Engine is made of parts that each own their state and do
// one job: the in-process gate; the row this process holds, with its
// Hold's depth, its idle time and its turn; the linger watcher, which
// hands an idle row on or releases it; the claim, which waits for the
// lane across processes (its own state, and what the rest of the lane
// knows of it); the settle, which finds a grant written while a claim
// gave up; the inbox of other processes' registrations; and the memory of
// the lane's epochs. The lane itself keeps only the steps that
// span them: Acquire's path, the release and the hand-offs. The parts
// that one invariant spans (Acquire's fast path takes the gate only while
// the row is held, under one lock) share the lane's mutex.
//
// The operating-system mechanisms — liveness locks, the datagram doorbell,
// file and process watches, process and file identity — live in
// internal/platform, chosen by build tags; everything in this package is
// portable.
//
// # Glossary
//
//   - scope: the database role a lease belongs to ("main" by default).
//   - lane: an independent write domain inside a scope; at most one holder
//     per (scope, lane) at a time. SQLite still serialises the commits of
//     different lanes.
//   - holder: one process (a UUID, its pid and process start time) that
//     holds a lane's active row.
//   - gate: the in-process lock that the writers of one lane pass, one at
//     a time, before the lane is theirs: while this process holds the
//     row, a newcomer may barge ahead of the one woken waiter, as with
//     sync.Mutex, until a waiter has waited 1 ms (starvation mode: strict
//     arrival order) (gate.go).
//   - grant: this process's ownership of a lane's active row, with its
//     epoch (heldrow.go); it outlives the holds made under it while the row
//     lingers.
//   - hold: one caller's use of a grant, from Acquire to Release (hold.go);
//     holds re-enter a grant already held through the context (WithHold).
//   - epoch: the fencing token, strictly increasing per (scope, lane),
//     never reused: a hand-off writes epoch + 1; every other grant (a
//     claim, a reclaim, a lane's first row or one recreated after its rows
//     were deleted) takes at least the clock floor (see above).
//   - fencing: the check, inside the writer's own transaction, that its
//     (holder, epoch) is still the active row (Hold.FenceBegin and
//     Fencing.Check; Hold.Fence for a caller that cannot check at BEGIN).
//   - registration: a waiter's datagram to the holder saying that it waits,
//     and where it stands in line; the holder orders registrations in
//     memory with the queue rows, instead of each waiter writing a row
//     while the holder keeps SQLite's write lock (inbox.go).
//   - doorbell: the datagram transport between the processes of one file:
//     grants, registrations and "look again" (doorbell.go, wire.go).
//   - want byte: a lock a waiting process holds on its own slot of the
//     lane's want region while it claims the lane; a holder tests the
//     region to learn that someone waits (want.go).
//   - linger: how long an idle holder keeps the row while nobody waits, so
//     the next write pays no claim (linger.go).
//   - slice: how long a holder may keep the lane for more of its own
//     work while another process waits — work queued at the gate, or a
//     writer that comes straight back — and at least two commits however
//     long they take (turn.go).
//   - turn: this process's time with a lane while another process waits:
//     whether a commit keeps the lane (work queued at the gate, or a
//     writer expected back within returnGrace; inside the slice, or for
//     minTurnCommits commits) and how long the lane waits for that writer
//     (turn.go).
//   - cold-open lease: the lease under which a process runs the migrations
//     the first time it opens a file, so that exactly one process migrates.
package lease

// Where things are, for maintainers (go doc does not show this comment).
//
// The engine: engine.go (an engine per file, its OS seams), hold.go (Hold
// and the fence), heartbeat.go, status.go and inspect.go (reading the
// tables without the engine), store.go (every statement on the lease
// tables), schema.go, recreate.go (the tables dropped or emptied:
// recreation, what became of a lost row), takeover.go (the epoch floor of
// a takeover), order.go (grant order, pure), liveness.go, doorbell.go and
// wire.go (datagrams), want.go (the want region), sidecarfollow.go (the
// liveness files followed when they are removed or replaced while in use),
// sidecarproof.go (every process keeps them in one place, proven
// through the database) and locking.go (each process's kind of SQLite
// file lock announced on them; kinds that cannot coexist refused at Open).
//
// A lane (laneState, lane.go) and its parts, one type and job each:
//   - gate.go: gate, the in-process gate (sync.Mutex's normal and
//     starvation modes), and the lane's tryEnter
//     and leave built on it;
//   - writeturn.go: writeTurn, the file's write turn in this process
//     (one per engine, not per lane: every lane of the file shares it);
//   - heldrow.go: grant and heldRow, the row this process holds, its
//     Hold's depth and idle time; turn.go: turn, when a commit inside the
//     slice keeps the lane;
//   - linger.go: lingerWatcher and its goroutine (watch), which hands an
//     idle row on or releases it;
//   - inline.go: the claim of a free lane inside the caller's
//     transaction (claimInline), and its end at that transaction's COMMIT
//     (Fencing.EndInline) or after it (endInline);
//   - claim.go: claimRun, one claim across processes (run, ringHolder,
//     attempt); await.go, how it waits; confirm.go, a grant confirmed
//     inside the caller's BEGIN IMMEDIATE; abandon.go, how it ends without
//     a grant; reclaim.go, whether a holder's lane may be taken over;
//     claimslot.go: claimSlot, what the rest of the lane knows of the
//     claim in progress;
//   - settle.go: settler and its goroutine (settle), which make sure that
//     a grant written while a claim gave up is used or passed on, without
//     a datagram (and bound the goroutines grant datagrams start);
//   - inbox.go: inbox, other processes' registrations, and the datagram
//     handlers that fill it (registered, grantArrived, lookArrived);
//   - epochs.go: epochMemory, the lane's epochs seen, and the clock floor;
//   - stale.go: rows that name this process but are not its grant (a
//     restored or copied file's), released (checkStale, sweepStale).
//
// The lane's own steps: acquire.go (Acquire's path, top-down: re-entry,
// enterHeld, enter, ensureRow, claim), release.go (the end of a Hold: hand
// off, keep the turn, or linger), handoff.go (the hand-off on the
// engine's connection), pass.go (the hand-off inside the last data
// commit, Fencing.Pass).
//
// sim_test.go and sim_os_test.go: the deterministic simulation (several
// engines on simulated OS seams, osSeams in engine.go, under a seeded
// scheduler).
