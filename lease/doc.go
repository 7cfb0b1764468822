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
// done in Go so that contexts are honoured. It never runs inside, and never
// commits or rolls back, a transaction it did not begin.
//
// # The protocol
//
// A writer calls Acquire and gets a Hold. Within a process, the writers of
// a lane first pass the lane's gate, in arrival order, so that they never
// fight in SQLite's busy handler. The first of them makes sure this process
// has the lane's row: if the process already holds it (lingering, or within
// its slice) the hold is granted at once; otherwise the process claims it.
// A claim takes a free lane at once, or waits: it announces that it wants
// the lane (its want byte), registers with the live holder by datagram
// (its registration: id, priority, arrival, place in line), and after a
// while, or when the holder cannot be reached, writes its own queue row.
//
// When the holder's last hold ends and another process waits, the holder
// hands the lane off: in one BEGIN IMMEDIATE on its private connection it
// orders the waiters (queue rows and registrations: lower priority first,
// FIFO within a priority, with aging, dead waiters skipped), rewrites the
// lane's row for the first live one with epoch + 1, and commits; then it
// rings that waiter's doorbell with the grant, carrying the registrations it
// did not serve. A waiter that learns nothing looks again after a bounded
// poll, so a lost datagram costs time, never safety.
//
// A write made under a Hold checks, inside its own transaction and just
// before COMMIT, that its (holder, epoch) is still the active row (Fence):
// a holder that lost the lane — broken, reclaimed, handed over — rolls back.
// A holder that died is recognised from its lifetime lock (liveness.go), or
// from its pid and start time when no lock can be tested, and its lane is
// reclaimed at epoch + 1 without waiting out a TTL; a holder that is alive
// but hung is never robbed, unless the opt-in StealAfterTTL says so.
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
//   - gate: the in-process FIFO that the writers of one lane pass, one at a
//     time, before the lane is theirs (gate.go).
//   - grant: this process's ownership of a lane's active row, with its
//     epoch (lane.go); it outlives the holds made under it while the row
//     lingers.
//   - hold: one caller's use of a grant, from Acquire to Release (hold.go);
//     holds re-enter a grant already held through the context (WithHold).
//   - epoch: the fencing token, strictly increasing per (scope, lane),
//     never reused: every claim, hand-off and reclaim writes epoch + 1.
//   - fencing: the check, inside the writer's own transaction, that its
//     (holder, epoch) is still the active row (Hold.Fence).
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
//     queued work while another process waits (acquire.go).
//   - cold-open lease: the lease under which a process runs the migrations
//     the first time it opens a file, so that exactly one process migrates.
package lease

// Where things are, for maintainers (go doc does not show this comment):
// engine.go (an engine per file), gate.go, acquire.go (Acquire, release,
// slice), claim.go (waiting for a lane), handoff.go, inbox.go
// (registrations), want.go, linger.go, order.go (grant order, pure),
// store.go (every statement on the lease tables), schema.go, liveness.go,
// doorbell.go and wire.go, heartbeat.go, hold.go (Hold and the fence),
// status.go and inspect.go (reading the tables without the engine).
