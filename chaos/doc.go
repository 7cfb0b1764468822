// Package chaos holds cleolease's fault-injection tests. It has no API: the
// code lives in its _test.go files.
//
// # The chaos ledger (ledger_test.go, writer_test.go, faults_test.go)
//
// N writer processes (the test binary re-executed in the role "writer",
// or another base's writer program: see -chaos.bases below)
// append consecutive entries to a ledger table under one lane (main/ledger)
// of one SQLite file, in _lease_mode=require. Each process runs a few
// goroutines, each owning a stream of entries w<i>g<j>-<n> (n = 1, 2, …).
// Every entry records its global sequence number, the writer's pid, the
// epoch it was written under (Lease.Epoch() inside a held lease, else the
// active _writer_leases row read in the same transaction) and, read by the
// INSERT itself, the epoch and pid of the active lease row at that moment.
// The writers mix plain db.BeginTx transactions, autocommit Exec and
// batches of both inside one held Lease. An entry is acknowledged — a line
// appended to the writer's ack log and fsynced, then a line on stdout —
// only after its commit returned nil.
//
// A nemesis in the test process, at random (faults_test.go's nemesisFaults
// gives the odds): SIGKILLs a writer and restarts it (kill); SIGSTOPs one
// and SIGCONTs it after a random pause, some longer than the 300 ms TTL
// (stop); breaks the lane with force through cleolease.Break, or through
// lease.Open + Engine.Break in a separate "breaker" process (break);
// deletes the sidecar — <db>-cleolease, and the portable tier's
// <db>-cleolease.d — and restarts a writer, which opens on a new sidecar
// while the others keep the old one (sidecar); floods the doorbell of a
// writer and, half the time, of the lane's holder with junk and
// valid-looking datagrams (registrations of fake waiters, forged grants,
// requests to look, status queries, the first versions' JSON) for
// 20–250 ms from a separate "flooder" process (flood). The writers bring
// the last fault themselves (giveup): a quarter of their operations run
// with a 0–20 ms deadline, so that a claim ends mid-wait at every step;
// after one gave up, a third of the time, the process starts nothing for
// 0–2 s, as an application that gave up and went away (a grant it missed
// then leaves the lane idle). -chaos.faults=kill,stop,break,giveup,
// sidecar,flood picks a subset (default all).
//
// The run goes through phases, each on a fresh file: WAL with the opt-in
// TTL steal, WAL without it (a paused holder is rescued only by a break),
// and rollback-journal (DELETE) mode with the TTL steal. After each phase
// (nemesis stopped, every writer shown to make progress again, writers
// shut down cleanly) it checks:
//
//   - every acknowledged entry is in the ledger exactly once, under the
//     epoch it was acknowledged with; no uid appears twice at all;
//   - sequence numbers are 1..N in commit (rowid) order, and each stream's
//     n is 1..max in commit order (no lost or repeated step);
//   - the recorded epoch never decreases in commit order, each epoch
//     belongs to one pid, and it equals the epoch of the lease row active
//     when the entry was written, whose holder pid is the writer's;
//   - an operation that failed with ErrLeaseLost or ErrLeaseUnavailable,
//     or one of the giveup fault that failed with its context's error,
//     never committed its entry;
//   - PRAGMA integrity_check is "ok";
//   - writers saw only ErrLeaseLost, ErrLeaseUnavailable and context errors
//     — never "database is locked" or anything else — and raced nothing;
//   - the lane was never idle for more than -chaos.idlebound (1 s) while a
//     live writer waited, and no operation waited more than
//     -chaos.waitbound (1 s) unless a stopped process blocked the lane
//     (see below).
//
// # The idle and wait checks (idle_test.go)
//
// Each writer logs its operations in its ack log with wall-clock times
// (the clock every process of the host shares, and SQLite's
// unixepoch('subsec')): when one starts waiting for the lane, when it was
// granted the lane — when BeginTx or AcquireLease returned; for an
// autocommit Exec, the time its INSERT ran, recorded in the entry — when
// that hold ended, or when it stopped waiting without a grant. The lane
// is held while some operation is inside a hold; a row that lingers after
// its hold ended, or that names a process that has not learnt of its
// grant, counts as idle. A waiter is live while its process is neither
// stopped nor dead. The test also reads the lane's active row every 10 ms
// (the monitor) and records what the nemesis did, when.
//
// The idle check: the longest interval in which some live writer waited
// while nobody held the lane, with these exclusions, each explicit in the
// code and totalled in the summary line ("excluded"):
//
//   - while the active row names a SIGSTOPped process (from the sample
//     that shows it to the next, at most to its SIGCONT): it blocks the
//     lane until it resumes, its row is stolen after the TTL or the lane
//     is broken, so counting starts again at the resume, the steal or the
//     break (the TTL steal itself is not timed);
//   - while the monitor cannot read the row (a rollback-journal file's
//     write lock) and some writer is stopped;
//   - while SQLite's write lock is held by a SIGSTOPped process (one frozen
//     inside a lease-engine transaction, such as the claim that reclaims a
//     killed holder's row): a probe process asks the kernel at each sample
//     who holds it (F_GETLK; for an open-file-description lock, the stopped
//     writers' /proc/PID/fdinfo: writelock_test.go), and nobody can write
//     until that process resumes or dies;
//   - a stopped writer inside a hold holds the lane (nothing idle, nothing
//     to exclude); a SIGKILLed holder is reclaimed at once (nothing
//     excluded: its hold ends when it was reaped).
//
// The wait check: the longest one operation waited live while the lane
// was not blocked by a stopped process (the exclusions above, and a
// stopped process inside a hold: "blocked"), whoever held the lane
// meanwhile. It catches a waiter passed over while other processes keep
// the lane busy — a starved waiter — which the idle check cannot see.
//
// A run fails when either bound is exceeded, printing the window: who
// waited, the lane's row, who was stopped or quiet, who was granted
// meanwhile, and what the nemesis did from 2 s before.
//
// Run it briefly (about 30 s) with
//
//	go test -race -count=1 ./chaos/
//
// and longer with -chaos.duration=10m (or CLEOLEASE_CHAOS_DURATION=10m);
// a long run needs -timeout 0 (or a timeout above the duration). Other
// knobs: -chaos.bases (or CLEOLEASE_CHAOS_BASES: go-sqlite3, modernc,
// ncruces, given to the writers in turn; a cgo-free base's writer is its
// module's internal/chaosworker program, built by the test, running
// internal/chaoswriter as this binary does), -chaos.faults (or
// CLEOLEASE_CHAOS_FAULTS), -chaos.phases,
// -chaos.idlebound, -chaos.waitbound, -chaos.writers, -chaos.goroutines,
// -chaos.seed, -chaos.dir (keep the files of the run there).
//
//snippet:nocompile go test
package chaos
