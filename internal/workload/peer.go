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
	case Raw, TxLock, Flock, Cleolease:
		return p, nil
	}
	return "", fmt.Errorf("unknown peer %q (want raw, txlock, flock or cleolease)", s)
}

// DriverName is the database/sql driver the peer opens.
func (p Peer) DriverName() string {
	if p == Cleolease {
		return "cleolease"
	}
	return "sqlite3"
}

// DSN is the data source name the peer opens path with, at the
// synchronous level sync ("" or "NORMAL" is cleolease's default; Raw
// ignores it).
func (p Peer) DSN(path, sync string) (string, error) {
	if sync == "" {
		sync = "NORMAL"
	}
	var q string
	switch p {
	case Raw:
		q = RawQuery
	case TxLock, Flock:
		q = fmt.Sprintf(TxLockQuery, sync)
	case Cleolease:
		if !strings.EqualFold(sync, "NORMAL") {
			q = "_synchronous=" + sync
		}
	default:
		return "", fmt.Errorf("unknown peer %q", p)
	}
	return FileURI(path, q)
}

// Open opens path as the peer does, at the synchronous level sync, and
// pings it (for cleolease: the cold open).
func Open(ctx context.Context, p Peer, path, sync string) (*sql.DB, error) {
	dsn, err := p.DSN(path, sync)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(p.DriverName(), dsn)
	if err != nil {
		return nil, err
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
