package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/google/uuid"
)

// Every process of a file must keep its liveness files in the same place:
// two processes that use different ones each see only their own locks,
// judge the other's holders by weaker evidence (across pid namespaces:
// dead) and never see each other's wants. The place is the sidecar beside
// the database, or a sidecar directory: given (_lease_sidecar_dir), or
// derived by the connector for a LiteFS mount given none (a private /tmp,
// a container or another mount path derives another one). So the engine
// proves that they agree: each place has a token, recorded in the
// database, in the table _writer_sidecar, by the lease transactions that
// may take a lane (a claim, a break, the bootstrap of a new file:
// transactions that write anyway, so a replica's open writes nothing),
// and a process that finds another place's token there, recorded during
// this boot and fresh, refuses with ErrSidecarDir before it judges any
// holder.
//
// The token of a sidecar directory is a random nonce kept in a file beside
// the liveness files ("<base>-cleolease.nonce"), so that two paths of one
// directory (a host directory bind-mounted into containers) agree and one
// path of two directories (a private /tmp) does not. The token of the
// sidecar beside the database is the identity of the database's directory
// ("beside:<dev>:<ino>"): it keeps no file beside the user's database,
// and cannot be removed with the sidecar. A token recorded during another
// boot (a reboot emptied the directory; another host was the primary
// before a failover) names holders that are all judged dead by their boot
// id anyway: it is replaced.
//
// A token is fresh while the processes that use it work: a claim that
// finds its own token, and every heartbeat tick of a process that held a
// lane since the last one (renewProof), rewrite written_at when it is
// older than TTL/3 — a lane handed from process to process inside the
// data commits runs no claim, and its grants are too young to beat. One
// older than the TTL belongs to processes that have held no lane for a
// TTL (gone, or idle): it is replaced, and those processes, if they come
// back while this place's processes work, are refused in their turn. Two
// places are thus refused whenever their processes overlap, and a change
// of place (a restart with another _lease_sidecar_dir) is accepted once
// the old token has gone stale.
//
// A temporary-file cleaner that removes the sidecar directory's files
// removes the nonce with the sidecar (issue 28 item 2): the next process
// creates a new nonce, and finds the old one recorded by live processes
// of the same directory. It must be served, not refused. Those processes
// move to the new sidecar (Follower, sidecarfollow.go) and, at the same
// moment, re-read the nonce file: they adopt the new nonce (or create one
// when nobody has yet) and record it in place of their previous one. So a
// process that finds another fresh nonce recorded, while its own nonce
// file is younger than moveWait, waits for them (awaitMovers: re-reading
// the record, outside any transaction: a wait bounded by the caller's
// context and moveWait, not by its lease wait), and refuses only after
// moveWait.
// A genuinely different directory never adopts its nonce, and is refused
// after moveWait; a nonce file older than moveWait has been seen by every
// process of its directory (each re-reads it every TTL/3), so a mismatch
// then is refused at once, as is a mismatch between a directory's nonce
// and the sidecar beside the database (a process beside the database
// never adopts a nonce). With private /tmp (systemd's PrivateTmp: one path,
// two directories) the two nonce files never meet: refused. Containers
// that bind-mount one host directory share its nonce file: accepted.
// A recorder that does not look (an engine opened with TablesReady has no
// file watch or heartbeat until its first lease use) would never adopt
// the new nonce: a newcomer that finds the record naming a live process
// at its own sidecar path, resolving paths as it does (samePlace), knows
// that process's nonce was removed, and records its own at once; the
// recorder adopts the file's nonce at its next claim (samePlace again).

// ddlSidecar is the table of the recorded token: one row (id 1); boot is
// the boot id of the process that recorded it, written_at milliseconds
// since the Unix epoch when one of its processes last claimed or
// heartbeat with it. The nullable columns (sidecarColumns; added to the
// tables of earlier versions, which leave them NULL) tell a record of
// another file and a recorder that has gone from a live place: db_dev and
// db_ino are the database file's identity, recorder_id, recorder_pid and
// recorder_start the recording process (a holder, as the lease rows name
// one: probeHolder), sidecar the path of its liveness file.
const ddlSidecar = `CREATE TABLE IF NOT EXISTS main._writer_sidecar (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	nonce TEXT NOT NULL,
	boot TEXT NOT NULL,
	written_at INTEGER NOT NULL,
	db_dev INTEGER,
	db_ino INTEGER,
	recorder_id TEXT,
	recorder_pid INTEGER,
	recorder_start TEXT,
	sidecar TEXT
)`

// ddlSidecarImport skips an imported record when the file has one (see
// ddlLeasesImport): the file's own record stays.
const ddlSidecarImport = `CREATE TRIGGER IF NOT EXISTS main.tx_writer_sidecar_import BEFORE INSERT ON _writer_sidecar
	WHEN EXISTS (SELECT 1 FROM main._writer_sidecar WHERE id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END`

// sidecarColumns are the columns of _writer_sidecar that earlier versions
// did not create, with their declarations.
var sidecarColumns = [][2]string{
	{"db_dev", "INTEGER"}, {"db_ino", "INTEGER"}, {"recorder_id", "TEXT"},
	{"recorder_pid", "INTEGER"}, {"recorder_start", "TEXT"}, {"sidecar", "TEXT"},
}

// sidecarRecord is the row of _writer_sidecar. The fields of the nullable
// columns are zero where an earlier version wrote the row.
type sidecarRecord struct {
	nonce, boot   string
	writtenAt     int64
	dbDev, dbIno  int64
	recorder      holder
	sidecar       string
	knowsFile     bool // db_dev and db_ino are set
	knowsRecorder bool // recorder_pid is set
}

const sidecarRecordSQL = `SELECT nonce, boot, written_at, db_dev, db_ino, recorder_id, recorder_pid, recorder_start, sidecar FROM main._writer_sidecar WHERE id = 1`

// readSidecarRecord reads the record on c, inside the caller's write
// transaction, adding the columns an earlier version's table lacks
// (sidecarColumns) first. Errors as QueryRow's (sql.ErrNoRows: no record;
// "no such table": missingSidecarTable).
func readSidecarRecord(ctx context.Context, c *sql.Conn) (sidecarRecord, error) {
	var r sidecarRecord
	var dev, ino, pid sql.NullInt64
	var id, start, side sql.NullString
	scan := func() error {
		return c.QueryRowContext(ctx, sidecarRecordSQL).Scan(&r.nonce, &r.boot, &r.writtenAt, &dev, &ino, &id, &pid, &start, &side)
	}
	err := scan()
	if err != nil && strings.Contains(err.Error(), "no such column") {
		for _, col := range sidecarColumns {
			_, aerr := c.ExecContext(ctx, `ALTER TABLE main._writer_sidecar ADD COLUMN `+col[0]+` `+col[1])
			if aerr != nil && !strings.Contains(aerr.Error(), "duplicate column") {
				return r, aerr
			}
		}
		err = scan()
	}
	r.dbDev, r.dbIno, r.knowsFile = dev.Int64, ino.Int64, dev.Valid && ino.Valid
	r.recorder = holder{ID: id.String, PID: pid.Int64, Start: start.String}
	r.knowsRecorder = pid.Valid
	r.sidecar = side.String
	return r, err
}

// sameFile reports whether the record names this engine's database file
// (true when it does not say, and on a replicated file: each LiteFS
// node's copy of one database has an identity of its own).
func (e *Engine) sameFile(r sidecarRecord) bool {
	return !r.knowsFile || e.opts.Replicated || (uint64(r.dbDev) == e.dev && uint64(r.dbIno) == e.ino)
}

// recorderGone reports whether the record's recorder has provably gone
// (its pid is free or another process's), with the reason.
func (e *Engine) recorderGone(r sidecarRecord) (bool, string) {
	if !r.knowsRecorder || r.recorder.ID == e.holderID {
		return false, ""
	}
	v := probeHolder(e.holderID, nil, r.recorder, e.opts.RemoteHolders)
	return v.dead(), v.reason
}

// samePlace reports whether the record was written by a live process of
// this boot that keeps its liveness files in this process's sidecar
// directory: the same path (the record's sidecar), resolved the same way
// (platform.SamePathsAs: the same mount namespace on Linux). A private
// /tmp or a container has the same path for another directory: false
// there, and wherever the recorder's namespace cannot be read. Never for
// the sidecar beside the database, whose token is its directory's
// identity, not a file's content.
func (e *Engine) samePlace(r sidecarRecord) bool {
	p := e.proof
	if p == nil || p.path == "" || strings.HasPrefix(r.nonce, besidePrefix) || !r.knowsRecorder ||
		r.boot != bootID() || r.sidecar != platform.SidecarPath(e.base) {
		return false
	}
	if !probeHolder(e.holderID, nil, r.recorder, e.opts.RemoteHolders).alive() {
		return false
	}
	return platform.SamePathsAs(r.recorder.PID)
}

// besidePrefix starts the token of the sidecar beside the database.
const besidePrefix = "beside:"

// errSidecarPending reports, inside a lease transaction, another
// directory's nonce that the processes of this one may still adopt: the
// caller rolls back and waits for them (awaitMovers).
var errSidecarPending = errors.New("another nonce recorded: waiting for the processes of this directory to adopt ours")

// sidecarProof is this process's token of the place its liveness files
// are kept, and what it knows of the record.
type sidecarProof struct {
	path string      // the nonce file, <base>-cleolease.nonce; "" beside the database
	mode fs.FileMode // the nonce file's permission bits

	mu    sync.Mutex
	nonce string   // the token
	prev  []string // this process's earlier nonces (a mover replaces them in the record)
	due   bool     // the nonce changed and is not recorded in place of prev yet
	// waitFrom is when a claim first met the recorded nonce waitOn, which
	// it waits for the movers to replace (zero: none); a refusal keeps it,
	// so that later claims against the same record are refused at once.
	waitFrom time.Time
	waitOn   string // the recorded nonce and this process's, NUL-separated
}

// newBesideProof is the token of the sidecar beside the database at path:
// its directory's identity.
func newBesideProof(path string) (*sidecarProof, error) {
	fi, err := platform.Stat(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("the database's directory: %w", err)
	}
	return &sidecarProof{nonce: besidePrefix + strconv.FormatUint(fi.ID.Dev, 16) + ":" + strconv.FormatUint(fi.ID.Ino, 16)}, nil
}

// newSidecarProof reads the nonce file beside the liveness files named
// after base, creating it with a new random nonce (mode's permission bits)
// when there is none.
func newSidecarProof(base string, mode fs.FileMode) (*sidecarProof, error) {
	p := base + "-cleolease.nonce"
	nonce, err := readOrCreateNonce(p, mode)
	if err != nil {
		return nil, err
	}
	return &sidecarProof{path: p, mode: mode, nonce: nonce}, nil
}

// readOrCreateNonce reads the nonce file at p, creating it with a new
// random nonce when there is none. Two processes creating it at once
// agree: the file appears whole (written aside, then linked into place)
// and only the first link wins. On Windows a read that meets another
// creator's link or removal of its temporary name fails with a sharing
// violation (the file's links share its sharing state): a failed read is
// retried there, for up to sharedReadRetries milliseconds.
func readOrCreateNonce(p string, mode fs.FileMode) (string, error) {
	for attempt, busy := 0, 0; ; attempt++ {
		b, err := os.ReadFile(p)
		if n := strings.TrimSpace(string(b)); err == nil && n != "" {
			return n, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			if runtime.GOOS == "windows" && busy < sharedReadRetries {
				busy, attempt = busy+1, attempt-1
				time.Sleep(time.Millisecond)
				continue
			}
			return "", fmt.Errorf("read the sidecar nonce: %w", err)
		}
		if attempt == 3 {
			return "", fmt.Errorf("sidecar nonce %s stays empty", p)
		}
		nonce := uuid.NewString()
		tmp := p + ".tmp-" + nonce
		if err := os.WriteFile(tmp, []byte(nonce+"\n"), mode.Perm()); err != nil {
			return "", fmt.Errorf("write the sidecar nonce: %w", err)
		}
		err = os.Link(tmp, p)
		os.Remove(tmp)
		if err == nil {
			return nonce, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("write the sidecar nonce: %w", err)
		}
	}
}

// sharedReadRetries bounds readOrCreateNonce's retries of a failed read
// on Windows (one a millisecond).
const sharedReadRetries = 100

// token returns the current token.
func (p *sidecarProof) token() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nonce
}

// mine reports whether nonce is this process's token (current), or one
// it had (earlier: this process may replace it).
func (p *sidecarProof) mine(nonce string) (current, earlier bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return nonce == p.nonce, slices.Contains(p.prev, nonce)
}

// reread reads the nonce file again (a directory's proof only), creating
// it when it is gone, and adopts what it holds: the nonce a process that
// found the file removed wrote there. It reports whether the nonce
// changed since the last record (a change waits to be recorded: due).
func (p *sidecarProof) reread() (due bool, err error) {
	if p.path == "" {
		return false, nil
	}
	n, err := readOrCreateNonce(p.path, p.mode)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && n != p.nonce {
		if len(p.prev) == maxEarlierNonces {
			p.prev = p.prev[1:]
		}
		p.prev = append(p.prev, p.nonce)
		p.nonce, p.due = n, true
	}
	return p.due, err
}

// maxEarlierNonces bounds the earlier nonces a process remembers.
const maxEarlierNonces = 8

// recorded notes that the current nonce was recorded in place of the
// earlier ones (or found there).
func (p *sidecarProof) recorded(nonce string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if nonce == p.nonce {
		p.due = false
		p.waitFrom, p.waitOn = time.Time{}, ""
	}
}

// young reports whether the nonce file was written less than d ago: the
// processes of its directory may not all have read it yet.
func (p *sidecarProof) young(d time.Duration) bool {
	if p.path == "" {
		return false
	}
	fi, err := os.Stat(p.path)
	return err != nil || time.Since(fi.ModTime()) < d
}

// waitingSince returns when this process began waiting for the movers
// to replace the recorded nonce with its own, starting the wait now if it
// was waiting for no such thing (another record, or another nonce of its
// own: a new removal).
func (p *sidecarProof) waitingSince(recorded string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on := recorded + "\x00" + p.nonce; p.waitFrom.IsZero() || p.waitOn != on {
		p.waitFrom, p.waitOn = time.Now(), on
	}
	return p.waitFrom
}

// waitEnds is when the current wait for the movers ends (d after it
// began).
func (p *sidecarProof) waitEnds(d time.Duration) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitFrom.Add(d)
}

// moveWait is how long a process whose nonce file is new waits for the
// processes of its directory to adopt its nonce (each re-reads the nonce
// file on every heartbeat, every TTL/3, and at once where the file watch
// reports its removal) before it refuses another one: TTL/2, so that
// processes of one file share the TTL.
func (e *Engine) moveWait() time.Duration { return e.opts.TTL / 2 }

// proveSidecar checks, inside the lease transaction op on c, that this
// process's liveness files are where the database's record says (see the
// comment at the top of this file). Claims and breaks check; the
// bootstrap of a new file records its token when there is none.
// ErrSidecarDir in an *Error when another place's token of this boot is
// recorded and fresh; errSidecarPending when this process waits for the
// movers first.
func (e *Engine) proveSidecar(ctx context.Context, op string, c *sql.Conn) error {
	p := e.proof
	if p == nil {
		return nil
	}
	switch op {
	case "claim", "break", "bootstrap":
	default:
		return nil
	}
	rec, err := readSidecarRecord(ctx, c)
	nonce, boot, writtenAt := rec.nonce, rec.boot, rec.writtenAt
	mine := p.token()
	record := func(how string) error {
		// An update, else an insert: not an upsert, whose insert the
		// import trigger (ddlSidecarImport) would skip whole.
		args := []any{mine, bootID(), e.nowMS(), int64(e.dev), int64(e.ino), e.holderID, e.pid, e.holderStart(), platform.SidecarPath(e.base)}
		res, err := c.ExecContext(ctx, `UPDATE main._writer_sidecar SET nonce = ?1, boot = ?2, written_at = ?3, db_dev = ?4, db_ino = ?5,
			recorder_id = ?6, recorder_pid = ?7, recorder_start = ?8, sidecar = ?9 WHERE id = 1`, args...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err == nil && n == 0 {
			_, err = c.ExecContext(ctx, `INSERT INTO main._writer_sidecar (id, nonce, boot, written_at, db_dev, db_ino, recorder_id, recorder_pid, recorder_start, sidecar)
				VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`, args...)
		}
		if err == nil {
			p.recorded(mine)
			if how != "" {
				e.logf(slog.LevelInfo, "cleolease: liveness files' token "+how+" replaced", "token", mine, "was", nonce, "boot", boot)
			}
		}
		return err
	}
	current, earlier := p.mine(nonce)
	age := e.nowMS() - writtenAt
	switch {
	case err != nil && missingSidecarTable(err):
		for _, ddl := range []string{ddlSidecar, ddlSidecarImport} {
			if _, err := c.ExecContext(ctx, ddl); err != nil {
				return err
			}
		}
		return record("")
	case errors.Is(err, sql.ErrNoRows):
		return record("")
	case err != nil:
		return err
	case current:
		p.recorded(mine)
		if op == "claim" && (age > e.opts.TTL.Milliseconds()/3 || !rec.knowsFile) {
			return record("")
		}
		return nil
	case op == "bootstrap":
		if boot != bootID() || earlier {
			return record("of another boot or an earlier nonce of this process")
		}
		return nil // a claim decides
	case boot != bootID():
		return record("of another boot or host")
	case earlier:
		return record("(an earlier nonce of this directory)")
	case age > e.opts.TTL.Milliseconds():
		return record(fmt.Sprintf("(stale: not renewed for %v)", time.Duration(age)*time.Millisecond))
	case !e.sameFile(rec):
		// Recorded by the processes of another database file: this file
		// is a copy of it, or was moved or restored here (cp, VACUUM INTO,
		// a backup): nobody else uses this file's liveness files.
		return record(fmt.Sprintf("(recorded for another database file, device %d inode %d: a copy, a move or a restore)", rec.dbDev, rec.dbIno))
	}
	if gone, why := e.recorderGone(rec); gone {
		// The process that recorded it has gone (the database moved with
		// mv after its last writer exited, say); a live process of its
		// place renews the record while it works (renewProof).
		return record("(its recorder, pid " + strconv.FormatInt(rec.recorder.PID, 10) + ", has gone: " + why + ")")
	}
	if e.samePlace(rec) {
		// The recorder keeps its liveness files at this process's path,
		// and resolves paths as this process does: one directory. Its
		// nonce is not in the nonce file any more — a cleaner removed
		// it, and a process (this one, or the one whose nonce the record
		// holds) wrote a new one, which a recorder that listens adopts
		// when it looks (followNonce) and one that does not (an engine
		// reopened with TablesReady) never would. Adopt what the file
		// holds now, and record it unless the record holds it already.
		if _, err := p.reread(); err == nil {
			if cur, _ := p.mine(nonce); cur {
				p.recorded(nonce)
				return nil
			}
		}
		mine = p.token()
		return record("(its nonce file was removed: process " + strconv.FormatInt(rec.recorder.PID, 10) +
			" keeps its liveness files at this same path and adopts the nonce the file holds now)")
	}
	switch {
	case p.path != "" && !strings.HasPrefix(nonce, besidePrefix) && p.young(e.moveWait()) &&
		time.Since(p.waitingSince(nonce)) < e.moveWait():
		return errSidecarPending
	}
	return e.errf(op, "", "", ErrSidecarDir, e.sidecarDirReason(rec))
}

// sidecarDirReason explains a refusal: where this process keeps its
// liveness files, where the record says the other process keeps them, by
// path where the record has it, how old the record is, and what to do.
func (e *Engine) sidecarDirReason(r sidecarRecord) string {
	p := e.proof
	here := platform.SidecarPath(e.base)
	if p.path == "" {
		here += " (beside the database: no _lease_sidecar_dir)"
	} else {
		here += " (sidecar directory " + filepath.Dir(p.path) + ")"
		if e.opts.SidecarDirDerived {
			here += ", derived for this LiteFS mount"
		}
	}
	there := r.sidecar
	switch {
	case there == "" && strings.HasPrefix(r.nonce, besidePrefix):
		there = "beside the database, reached through another directory"
	case there == "":
		there = "in another sidecar directory, or under another name in this one " +
			"(a private /tmp, a container or another mount path derives another directory; the database reached through another path, " +
			"or another LiteFS node of this host, names its files differently)"
	}
	if r.sidecar != "" && r.sidecar == platform.SidecarPath(e.base) {
		there += " (the same path, in another directory: the recorder sees another tree under it — a private /tmp, a container — or its namespace cannot be read)"
	}
	who := "another process of this host"
	if r.knowsRecorder {
		who = "process " + strconv.FormatInt(r.recorder.PID, 10) + " of this host"
	}
	age := time.Duration(e.nowMS()-r.writtenAt) * time.Millisecond
	return who + " keeps this database's liveness files elsewhere, and neither would see the other's locks: this process keeps them at " +
		here + "; the database records " + there + ", written " + age.Round(time.Millisecond).String() + " ago" +
		"; give every process of this database the same database path and the same _lease_sidecar_dir (or none), " +
		"or let that process finish: its record is replaced once it has gone or has not renewed it for the TTL (" + e.opts.TTL.String() + ")"
}

// missingSidecarTable reports SQLite's "no such table" for
// _writer_sidecar: a tool dropped it (or no process recorded a token yet).
func missingSidecarTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table") && strings.Contains(err.Error(), "_writer_sidecar")
}

// awaitMovers waits, outside any transaction, while the record names
// another nonce that the processes of this directory may still replace
// with this process's (see errSidecarPending): it asks this process's own
// files to be checked (it may be the one to adopt), then re-reads the
// record every proofPoll until it names this process's nonce, is stale or
// of another boot, or moveWait has passed since the wait began; the
// caller's transaction then decides. ctx's error if it ends first.
func (e *Engine) awaitMovers(ctx context.Context) error {
	e.kickFollow()
	p := e.proof
	deadline := p.waitEnds(e.moveWait())
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if !time.Now().Before(deadline) {
			return nil
		}
		var nonce, boot string
		var writtenAt int64
		err := e.db().QueryRowContext(context.WithoutCancel(ctx), `SELECT nonce, boot, written_at FROM main._writer_sidecar WHERE id = 1`).Scan(&nonce, &boot, &writtenAt)
		if cur, earlier := p.mine(nonce); err == nil && (cur || earlier || boot != bootID() || e.nowMS()-writtenAt > e.opts.TTL.Milliseconds()) {
			return nil
		}
		if err != nil && !isBusy(err) {
			return nil // the transaction reads it again
		}
		t.Reset(proofPoll)
	}
}

// proofPoll is how often awaitMovers re-reads the record.
const proofPoll = 10 * time.Millisecond

// renewProof keeps this process's token fresh while it works (see the
// comment at the top of this file): on a heartbeat tick after which it
// held a lane (active), a read of the record, and, when it names this
// process's token and was written more than TTL/3 ago, a short write.
func (e *Engine) renewProof(active bool) {
	p := e.proof
	if p == nil || !active {
		return
	}
	ctx, cancel := context.WithTimeout(e.hbCtx, e.opts.TTL/3)
	defer cancel()
	mine := p.token()
	fresh := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) bool {
		var writtenAt int64
		err := q.QueryRowContext(ctx, `SELECT written_at FROM main._writer_sidecar WHERE id = 1 AND nonce = ? AND boot = ?`, mine, bootID()).Scan(&writtenAt)
		return err != nil || e.nowMS()-writtenAt <= e.opts.TTL.Milliseconds()/3 // (not ours, or unreadable: a claim decides)
	}
	if fresh(e.db()) {
		return
	}
	err := e.immediateOp(ctx, "sidecar", func(ctx context.Context, c *sql.Conn) error {
		if fresh(c) {
			return nil
		}
		if _, err := readSidecarRecord(ctx, c); err != nil { // (adds the columns an earlier version lacks)
			return err
		}
		// The renewing process becomes the recorder: a live process of
		// this place (recorderGone).
		_, err := c.ExecContext(ctx, `UPDATE main._writer_sidecar SET written_at = ?, recorder_id = ?, recorder_pid = ?, recorder_start = ?
			WHERE id = 1 AND nonce = ?`, e.nowMS(), e.holderID, e.pid, e.holderStart(), mine)
		return err
	})
	if err != nil {
		e.logf(slog.LevelDebug, "cleolease: liveness files' token not renewed", "err", err)
	}
}

// recordMoved records this process's nonce in place of its earlier ones
// after it adopted or created a new one (followNonce): a process that
// waits for it (awaitMovers) is then served. A record that names another
// directory's nonce is left alone.
func (e *Engine) recordMoved(ctx context.Context) error {
	p := e.proof
	p.mu.Lock()
	nonce, prev := p.nonce, slices.Clone(p.prev)
	p.mu.Unlock()
	err := e.immediateOp(ctx, "sidecar", func(ctx context.Context, c *sql.Conn) error {
		for _, old := range prev {
			if _, err := c.ExecContext(ctx, `UPDATE main._writer_sidecar SET nonce = ?, boot = ?, written_at = ? WHERE id = 1 AND nonce = ?`,
				nonce, bootID(), e.nowMS(), old); err != nil {
				return err
			}
		}
		return nil
	})
	if missingSidecarTable(err) {
		err = nil // nothing recorded: the next claim records
	}
	if err == nil {
		p.recorded(nonce)
	}
	return err
}
