package workload

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Peer is a way of opening and writing an SQLite file that cleolease is
// measured against (or cleolease itself). Its value is the name used in
// results and benchmark names (driver=txlock, …).
type Peer string

// The peers.
const (
	// Raw is go-sqlite3 as an application usually opens it
	// (RawQuery: WAL, a 5 s busy timeout) with database/sql's plain
	// (deferred) BEGIN: the demo's "before".
	Raw Peer = "raw"
	// TxLock is raw go-sqlite3 at its best for writers: BeginTx with
	// _txlock=immediate (BEGIN IMMEDIATE) and the pragmas cleolease
	// applies by default (TxLockQuery). Both it and cleolease pay
	// database/sql's transaction, so it is the fair comparison.
	TxLock Peer = "txlock"
	// Flock is TxLock with every transaction inside an exclusive flock(2)
	// on a side file (the database path plus "-flock"): the do-it-yourself
	// fix an application would write itself. Only where flock exists (not
	// Windows).
	Flock Peer = "flock"
	// Pool1 is TxLock with db.SetMaxOpenConns(1): the advice go-sqlite3's
	// own FAQ gives for one process, one warm connection that the
	// process's goroutines take in turn (database/sql's pool is the lock).
	// Compared only where one process writes (Load.Peers).
	Pool1 Peer = "pool1"
	// Cleolease is the cleolease driver with its default DSN.
	Cleolease Peer = "cleolease"
)

// BenchPeers are the peers the benchmarks compare, in the order they run:
// TxLock, Flock (where Supported) and Cleolease.
var BenchPeers = benchPeers()

func benchPeers() []Peer {
	var ps []Peer
	for _, p := range []Peer{TxLock, Flock, Cleolease} {
		if p.Supported() {
			ps = append(ps, p)
		}
	}
	return ps
}

// Supported reports whether the peer runs on this platform (Flock needs
// flock(2), which Windows lacks).
func (p Peer) Supported() bool { return p != Flock || haveFlock }

// RawQuery is the DSN query of the Raw peer: the usual go-sqlite3 set-up.
const RawQuery = "_busy_timeout=5000&_journal_mode=WAL"

// TxLockQuery is the DSN query of the TxLock and Flock peers; %s is the
// synchronous level.
const TxLockQuery = "_busy_timeout=30000&_journal_mode=WAL&_synchronous=%s&_fk=1&_txlock=immediate"

// ParsePeer returns the peer named s.
func ParsePeer(s string) (Peer, error) {
	switch p := Peer(s); p {
	case Raw, TxLock, Flock, Pool1, Cleolease:
		return p, nil
	}
	return "", fmt.Errorf("unknown peer %q (want raw, txlock, flock, pool1 or cleolease)", s)
}

// Base is an SQLite driver a peer runs on: "" (BaseGoSQLite3), "modernc"
// or "ncruces". One program links one base (go-sqlite3 and ncruces's driver
// both register "sqlite3"), so a fleet on another base runs that base's
// worker program (modernc/internal/benchworker, ncruces/internal/benchworker).
type Base string

// The bases.
const (
	BaseGoSQLite3 Base = ""
	BaseModernc   Base = "modernc"
	BaseNcruces   Base = "ncruces"
)

// ParseBase returns the base named s ("go-sqlite3" is BaseGoSQLite3).
func ParseBase(s string) (Base, error) {
	switch s {
	case "go-sqlite3", "":
		return BaseGoSQLite3, nil
	case "modernc", "ncruces":
		return Base(s), nil
	}
	return "", fmt.Errorf("unknown base %q (want go-sqlite3, modernc or ncruces)", s)
}

// String is the base's name: "go-sqlite3", "modernc", "ncruces".
func (b Base) String() string {
	if b == BaseGoSQLite3 {
		return "go-sqlite3"
	}
	return string(b)
}

// baseQueries are, per base, the DSN query of TxLock and Flock (%s: the
// synchronous level) and of Cleolease at a synchronous level other than
// NORMAL (%s), in the base's dialect: the same settings on every base.
var baseQueries = map[Base][2]string{
	BaseGoSQLite3: {TxLockQuery, "_synchronous=%s"},
	BaseModernc:   {"_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(%s)&_pragma=foreign_keys(1)&_txlock=immediate", "_pragma=synchronous(%s)"},
	BaseNcruces:   {"_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(%s)&_pragma=foreign_keys(1)&_txlock=immediate", "_pragma=synchronous(%s)"},
}

// DriverName is the database/sql driver the peer opens on go-sqlite3.
func (p Peer) DriverName() string { return p.DriverNameOn(BaseGoSQLite3) }

// DriverNameOn is the database/sql driver the peer opens on base b.
func (p Peer) DriverNameOn(b Base) string {
	switch {
	case p == Cleolease && b == BaseGoSQLite3:
		return "cleolease"
	case p == Cleolease:
		return "cleolease-" + string(b)
	case b == BaseModernc:
		return "sqlite"
	}
	return "sqlite3" // go-sqlite3's, or ncruces's
}

// DSN is the data source name the peer opens path with on go-sqlite3, at
// the synchronous level sync ("" or "NORMAL" is cleolease's default; Raw
// ignores it).
func (p Peer) DSN(path, sync string) (string, error) { return p.DSNOn(BaseGoSQLite3, path, sync) }

// DSNOn is DSN on base b, in its dialect. Raw runs on go-sqlite3 only.
func (p Peer) DSNOn(b Base, path, sync string) (string, error) {
	if sync == "" {
		sync = "NORMAL"
	}
	qs, ok := baseQueries[b]
	if !ok {
		return "", fmt.Errorf("unknown base %q", b)
	}
	var q string
	switch p {
	case Raw:
		if b != BaseGoSQLite3 {
			return "", fmt.Errorf("the raw peer runs on go-sqlite3 only")
		}
		q = RawQuery
	case TxLock, Flock, Pool1:
		q = fmt.Sprintf(qs[0], sync)
	case Cleolease:
		if !strings.EqualFold(sync, "NORMAL") {
			q = fmt.Sprintf(qs[1], sync)
		}
	default:
		return "", fmt.Errorf("unknown peer %q", p)
	}
	return FileURI(path, q)
}

// Open opens path as the peer does on go-sqlite3, at the synchronous level
// sync, and pings it (for cleolease: the cold open).
func Open(ctx context.Context, p Peer, path, sync string) (*sql.DB, error) {
	return OpenOn(ctx, BaseGoSQLite3, p, path, sync)
}

// OpenOn is Open on base b, whose driver the program must link.
func OpenOn(ctx context.Context, b Base, p Peer, path, sync string) (*sql.DB, error) {
	dsn, err := p.DSNOn(b, path, sync)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(p.DriverNameOn(b), dsn)
	if err != nil {
		return nil, err
	}
	if p == Pool1 {
		db.SetMaxOpenConns(1)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// FileURI returns an SQLite "file:" URI for path (made absolute) with the
// given query, escaping what SQLite's URI parser would otherwise read as
// syntax ('?', '#', '%').
func FileURI(path, query string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := "file:" + (&url.URL{Path: abs}).EscapedPath()
	if query != "" {
		u += "?" + query
	}
	return u, nil
}

// ExecRaw runs statements on the database at path through a raw go-sqlite3
// connection opened with the DSN query query (creating the file), then
// closes it: set-up that no peer's measurement includes.
func ExecRaw(ctx context.Context, path, query, statements string) error {
	dsn, err := FileURI(path, query)
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, statements)
	return err
}
