// Package chaos holds cleolease's fault-injection tests. It has no API: the
// code lives in its _test.go files.
//
// # The chaos ledger (ledger_test.go, writer_test.go)
//
// N writer processes (the test binary re-executed in the role "writer")
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
// A nemesis in the test process, at random: SIGKILLs a writer and restarts
// it; SIGSTOPs one and SIGCONTs it after a random pause (some longer than
// the 300 ms TTL); breaks the lane with force through cleolease.Break, or
// through lease.Open + Engine.Break in a separate "breaker" process.
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
//   - an operation that failed with ErrLeaseLost or ErrLeaseUnavailable
//     never committed its entry;
//   - PRAGMA integrity_check is "ok";
//   - writers saw only ErrLeaseLost, ErrLeaseUnavailable and context errors
//     — never "database is locked" or anything else — and raced nothing.
//
// Run it briefly (about 30 s) with
//
//	go test -race -count=1 ./chaos/
//
// and longer with -chaos.duration=10m (or CLEOLEASE_CHAOS_DURATION=10m);
// a long run needs -timeout 0 (or a timeout above the duration). Other
// knobs: -chaos.writers, -chaos.goroutines, -chaos.seed, -chaos.dir (keep
// the files of the run there).
//
//snippet:nocompile go test
package chaos
