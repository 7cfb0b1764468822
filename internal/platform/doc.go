// Package platform holds the operating-system mechanisms of cleolease's
// lease engine (package lease) behind a few small seams, one job each:
//
//   - liveness evidence: a lock each process holds for its lifetime on a
//     file of its own, tested by its peers (Locks, locks*.go), followed
//     to the new file when it is removed while in use (Follower,
//     locks_follow.go), beside which each process announces the kind of
//     SQLite file lock it uses with a shared lock of its life (Announcer,
//     locks.go);
//   - wake-up transport: datagrams between the processes of one database
//     (Bell, bell*.go);
//   - file watch: exits of peers and changes of the database's identity,
//     reported by the kernel where it can (FileWatch, watch*.go), and
//     process exit (WatchExit, exit*.go);
//   - process identity: boot, namespace and start time of a pid (proc*.go);
//   - file identity: device and inode, or volume serial and file index
//     (Stat, fileid*.go);
//   - filesystem type: a network or FUSE filesystem, on which the database
//     is refused (FileSystem, fstype*.go).
//
// One mechanism per file, chosen by build tags, with _other files that
// report a mechanism missing so that the package compiles for every GOOS,
// in the style of ncruces/go-sqlite3's vfs/ (os_ofd.go, os_bsd.go,
// shm_other.go). The package does not import go-sqlite3, so it type-checks
// for every OS with cgo off.
//
// Tiers. On Linux the default tier uses open-file-description locks on
// one sidecar file, abstract Unix datagram sockets and inotify. The
// portable tier — what macOS and the BSDs use — is selectable on Linux
// with the build tag cleolease_portable: flock(2) on files of our own,
// Unix datagram sockets bound to a path (datagrams capped at 2,048
// bytes, macOS's default net.local.dgram.maxdgram), and a stat of the
// database on every identity check instead of a watch. The build tag
// cleolease_pollwake removes the datagram transport: waiters then poll
// with a capped back-off. Windows has one tier: LockFileEx on sidecar
// bytes, a mailslot per engine for the doorbell (bell_mailslot_windows.go)
// and process handles for exits. Processes of the two Linux
// tiers refuse to share a database (ErrTierConflict); the pollwake tag
// changes only how processes wake and mixes freely with either.
//
// Never opened here: the database file and its -wal, -shm and -journal
// companions. On every Unix, closing any descriptor of a file drops all of
// the process's POSIX locks on it, SQLite's included
// (https://sqlite.org/howtocorrupt.html §2.2).
package platform

import "errors"

// ErrUnsupported reports a mechanism this platform (or build) does not
// have; the engine falls back to a weaker one (polling, pid and start
// time), never to a less safe one.
var ErrUnsupported = errors.New("not supported on this platform")

// ErrTierConflict reports that processes of the other Linux tier
// (cleolease_portable or not) use the database: their liveness evidence
// is invisible to this process, so it refuses to take part.
var ErrTierConflict = errors.New("processes of another liveness tier use this database")

// ErrFull reports a datagram not delivered because the receiver's queue
// is full; the sender may retry.
var ErrFull = errors.New("receiver's datagram queue is full")

// ErrLocksIgnored reports that the liveness files' locks do not conflict
// between two open files of the same file (a lock taken on one is not
// seen from the other): the filesystem ignores them (LiteFS, which
// implements only SQLite's lock bytes; another FUSE daemon; a network
// share). A lock there proves nothing, so OpenLocks refuses rather than
// judge live holders dead on that evidence.
var ErrLocksIgnored = errors.New("the liveness files' locks do not conflict between open files on this filesystem")
