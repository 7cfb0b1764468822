package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A sidecar directory derived by the connector (Options.SidecarDirDerived:
// a LiteFS mount, which keeps only SQLite's files, given no
// _lease_sidecar_dir) is derived the same way by every process of the
// host, but a process may still derive another one: a private /tmp, a
// container, the database reached through another mount path. Two such
// processes would each see their own liveness files and judge the other's
// holders by weaker evidence (or, across pid namespaces, dead). So the
// engine proves that they agree: the first process of the directory keeps
// a random nonce in a file beside the liveness files
// ("<base>-cleolease.nonce") and records it in the database, in the table
// _writer_sidecar, inside the first lease transaction that may take a lane
// (a claim, a break, the bootstrap: transactions that write anyway, so a
// replica's open writes nothing). A process that finds another nonce there,
// recorded during this boot, derived another directory: it refuses with
// ErrSidecarDir before it judges any holder. A nonce recorded during
// another boot (a reboot emptied the directory, or another host was the
// primary before a failover) names holders that are all judged dead by
// their boot id anyway: it is replaced.

// ddlSidecar is the table of the recorded nonce: one row (id 1); boot is
// the boot id of the process that recorded it, written_at milliseconds
// since the Unix epoch.
const ddlSidecar = `CREATE TABLE IF NOT EXISTS main._writer_sidecar (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	nonce TEXT NOT NULL,
	boot TEXT NOT NULL,
	written_at INTEGER NOT NULL
)`

// sidecarProof is this process's nonce of a derived sidecar directory and
// where it is kept.
type sidecarProof struct {
	path  string // the nonce file, <base>-cleolease.nonce
	nonce string
}

// newSidecarProof reads the nonce file beside the liveness files named
// after base, creating it with a new random nonce (mode's permission bits)
// when there is none. Two processes creating it at once agree: the file
// appears whole (written aside, then linked into place) and only the first
// link wins. On Windows a read that meets another creator's link or
// removal of its temporary name fails with a sharing violation (the
// file's links share its sharing state): a failed read is retried there,
// for up to sharedReadRetries milliseconds.
func newSidecarProof(base string, mode fs.FileMode) (*sidecarProof, error) {
	p := base + "-cleolease.nonce"
	for attempt, busy := 0, 0; ; attempt++ {
		b, err := os.ReadFile(p)
		if n := strings.TrimSpace(string(b)); err == nil && n != "" {
			return &sidecarProof{path: p, nonce: n}, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			if runtime.GOOS == "windows" && busy < sharedReadRetries {
				busy, attempt = busy+1, attempt-1
				time.Sleep(time.Millisecond)
				continue
			}
			return nil, fmt.Errorf("read the sidecar nonce: %w", err)
		}
		if attempt == 3 {
			return nil, fmt.Errorf("sidecar nonce %s stays empty", p)
		}
		nonce := uuid.NewString()
		tmp := p + ".tmp-" + nonce
		if err := os.WriteFile(tmp, []byte(nonce+"\n"), mode.Perm()); err != nil {
			return nil, fmt.Errorf("write the sidecar nonce: %w", err)
		}
		err = os.Link(tmp, p)
		os.Remove(tmp)
		if err == nil {
			return &sidecarProof{path: p, nonce: nonce}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("write the sidecar nonce: %w", err)
		}
	}
}

// sharedReadRetries bounds newSidecarProof's retries of a failed read on
// Windows (one a millisecond).
const sharedReadRetries = 100

// proveSidecar checks, inside the lease transaction op on c, that this
// process's derived sidecar directory is the one recorded in the database
// (see the comment at the top of this file), recording it when nothing
// or another boot's is recorded. Only transactions that may take a lane
// check (claim, break, bootstrap); without a derived directory it does
// nothing. ErrSidecarDir in an *Error when another process of this boot
// recorded another nonce.
func (e *Engine) proveSidecar(ctx context.Context, op string, c *sql.Conn) error {
	p := e.proof
	if p == nil || (op != "claim" && op != "break" && op != "bootstrap") {
		return nil
	}
	if _, err := c.ExecContext(ctx, ddlSidecar); err != nil {
		return err
	}
	var nonce, boot string
	err := c.QueryRowContext(ctx, `SELECT nonce, boot FROM main._writer_sidecar WHERE id = 1`).Scan(&nonce, &boot)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = c.ExecContext(ctx, `INSERT INTO main._writer_sidecar (id, nonce, boot, written_at) VALUES (1, ?, ?, ?)`, p.nonce, bootID(), e.nowMS())
		return err
	case err != nil:
		return err
	case nonce == p.nonce:
		return nil
	case boot != bootID():
		e.logf(slog.LevelInfo, "cleolease: sidecar nonce of another boot or host replaced", "nonce_file", p.path, "boot", boot)
		_, err = c.ExecContext(ctx, `UPDATE main._writer_sidecar SET nonce = ?, boot = ?, written_at = ? WHERE id = 1`, p.nonce, bootID(), e.nowMS())
		return err
	}
	return e.errf(op, "", "", ErrSidecarDir, fmt.Sprintf(
		"another process of this host keeps this database's liveness files in another directory: the nonce recorded in the database is not the one in %s, "+
			"derived for this LiteFS mount (a private /tmp, a container or another mount path derives another directory); "+
			"set _lease_sidecar_dir to one local directory that every process of the host gives", p.path))
}
