package lease

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
)

// The record of where the liveness files are kept tells files and
// recorders apart (issue 39): a record of another database file (a copy,
// a move, a restore elsewhere) or of a recorder that has gone is replaced
// at once; one of a live recorder of this very file at another place is
// refused, with a message naming both places by path, the record's age
// and what to do. A table an earlier version created (without those
// columns) gains them at the next claim.
func TestSidecarRecordTellsFilesAndRecordersApart(t *testing.T) {
	ctx := context.Background()
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	claim := func() error {
		h, err := e.Acquire(ctx, "s", "l", req)
		if err == nil {
			h.Release()
		}
		return err
	}
	raw := rawDB(t, path)
	// An earlier version's table, recording this place: the claim adds
	// the columns and records this file and this process in them.
	if _, err := raw.Exec(`DROP TABLE IF EXISTS _writer_sidecar;
		CREATE TABLE _writer_sidecar (id INTEGER PRIMARY KEY CHECK (id = 1), nonce TEXT NOT NULL, boot TEXT NOT NULL, written_at INTEGER NOT NULL);
		INSERT INTO _writer_sidecar VALUES (1, ?, ?, ?)`, e.proof.token(), bootID(), e.nowMS()); err != nil {
		t.Fatal(err)
	}
	if err := claim(); err != nil {
		t.Fatal(err)
	}
	var cols int
	if err := raw.QueryRow(`SELECT count(*) FROM pragma_table_info('_writer_sidecar')`).Scan(&cols); err != nil || cols != 10 {
		t.Fatalf("_writer_sidecar has %d columns (%v) after the claim, want 10", cols, err)
	}

	// A live recorder (this test's process) of this file at another place:
	// refused, naming both places.
	other := "/elsewhere/lease.db-cleolease"
	if _, err := raw.Exec(`UPDATE _writer_sidecar SET nonce = 'beside:1:2', db_dev = ?, db_ino = ?, recorder_id = 'cl-other', recorder_pid = ?, recorder_start = '', sidecar = ?`,
		int64(e.dev), int64(e.ino), os.Getpid(), other); err != nil {
		t.Fatal(err)
	}
	err := claim()
	if !errors.Is(err, ErrSidecarDir) {
		t.Fatalf("claim against a live recorder of this file elsewhere: %v, want ErrSidecarDir", err)
	}
	for _, want := range []string{platform.SidecarPath(e.base), other, "process " + strconv.Itoa(os.Getpid()), " ago", "same _lease_sidecar_dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %q", err, want)
		}
	}

	// A recorder that has gone (no such pid): replaced.
	if _, err := raw.Exec(`UPDATE _writer_sidecar SET recorder_pid = ?`, int64(platform.MaxPID)+1); err != nil {
		t.Fatal(err)
	}
	if err := claim(); err != nil {
		t.Fatalf("claim against a record whose recorder has gone: %v, want it replaced", err)
	}

	// A record of another database file: replaced.
	if _, err := raw.Exec(`UPDATE _writer_sidecar SET nonce = 'beside:1:2', db_ino = db_ino + 1, recorder_pid = ?`, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if err := claim(); err != nil {
		t.Fatalf("claim against a record of another file: %v, want it replaced", err)
	}
	var ino int64
	var recorder string
	if err := raw.QueryRow(`SELECT db_ino, recorder_id FROM _writer_sidecar`).Scan(&ino, &recorder); err != nil || uint64(ino) != e.ino || recorder != e.holderID {
		t.Fatalf("record after the claim: inode %d, recorder %q (%v); want %d, %q", ino, recorder, err, e.ino, e.holderID)
	}
}
