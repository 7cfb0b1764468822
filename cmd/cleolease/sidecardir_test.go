package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
)

// status and break look for the liveness files where the processes keep
// them: --sidecar-dir when given; on a LiteFS mount (injected here) the
// directory the connector derives there; elsewhere beside the database.
func TestSidecarDirFor(t *testing.T) {
	dir := testdir.New(t)
	db := filepath.Join(dir, "app.db")
	orig := detectFileSystem
	t.Cleanup(func() { detectFileSystem = orig })
	liteFS := false
	detectFileSystem = func(d string) (platform.FSInfo, error) {
		if d == dir && liteFS {
			return platform.FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true}, nil
		}
		return orig(d)
	}
	if got := sidecarDirFor(db, ""); got != "" {
		t.Errorf("local: %q, want beside the database", got)
	}
	liteFS = true
	if got := sidecarDirFor(db, ""); got != platform.LiteFSSidecarDir() {
		t.Errorf("LiteFS: %q, want %q", got, platform.LiteFSSidecarDir())
	}
	if got := sidecarDirFor(db, "/srv/given"); got != "/srv/given" {
		t.Errorf("LiteFS with --sidecar-dir: %q, want the given one", got)
	}
}

// migrate on a LiteFS mount (injected here) keep their liveness
// files where the processes keep theirs, the derived directory, and create
// nothing beside the database but SQLite's files (LiteFS would take a new
// file for a database and replicate it). Before the fix migrate created
// <db>-cleolease beside the database, which on a real mount failed with
// ErrSidecarDir and left that file in both nodes' mounts.
func TestMigrateOnLiteFSCreatesNothingBeside(t *testing.T) {
	dir := testdir.New(t)
	tmp := testdir.New(t)
	// os.TempDir reads TMPDIR on Unix, TMP (then TEMP) on Windows.
	t.Setenv("TMPDIR", tmp)
	t.Setenv("TMP", tmp)
	t.Setenv("TEMP", tmp)
	db := filepath.Join(dir, "app.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	writeMigrations(t, filepath.Join(dir, "migrations"))
	orig := detectFileSystem
	t.Cleanup(func() { detectFileSystem = orig })
	detectFileSystem = func(d string) (platform.FSInfo, error) {
		if d == dir {
			return platform.FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true}, nil
		}
		return orig(d)
	}
	var out strings.Builder
	if err := runMigrate(context.Background(), &out, db, migrateOp{name: "up"}, "file://"+filepath.ToSlash(filepath.Join(dir, "migrations")), "schema_migrations", "", false); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		switch e.Name() {
		case "app.db", "app.db-wal", "app.db-shm", "app.db-journal", "migrations":
		default:
			t.Errorf("%s beside the database on LiteFS", e.Name())
		}
	}
	// (The sidecar itself is removed when the last engine closes.)
	if m, _ := filepath.Glob(filepath.Join(platform.LiteFSSidecarDir(), "app.db-*-cleolease.nonce")); len(m) != 1 {
		t.Errorf("derived directory: %v, want the nonce that proves it shared", m)
	}
}

// migrate and break on a LiteFS replica (its .primary file injected) say
// that the file is a replica and name the primary, whether SQLite refused
// the write (disk I/O error: permission denied) or the sidecar proof
// refused first (the primary, on this host, recorded its nonce); other
// failures, and the same failures off a replica, are left as they were.
// Before, break said "disk I/O error: permission denied" or named
// _lease_sidecar_dir.
func TestReplicaFailure(t *testing.T) {
	orig := readPrimary
	t.Cleanup(func() { readPrimary = orig })
	onReplica := true
	readPrimary = func(string) (string, bool) { return "node-a", onReplica }
	refused := sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite, SystemErrno: syscall.EACCES}
	sidecar := &lease.Error{Op: "claim", Path: "/mnt/app.db", Err: lease.ErrSidecarDir}
	other := errors.New("no such table: t")
	for _, f := range []struct {
		name string
		fn   func(string, error) error
	}{{"leaseFailure", leaseFailure}, {"migrateFailure", migrateFailure}} {
		for _, err := range []error{refused, sidecar} {
			onReplica = true
			if got := f.fn("/mnt/app.db", err).Error(); !strings.Contains(got, "LiteFS replica") || !strings.Contains(got, "node-a") {
				t.Errorf("%s(%v) on a replica: %q, want the replica and its primary named", f.name, err, got)
			}
			onReplica = false
			if got := f.fn("/mnt/app.db", err).Error(); strings.Contains(got, "replica") {
				t.Errorf("%s(%v) off a replica: %q", f.name, err, got)
			}
		}
		onReplica = true
		if got := f.fn("/mnt/app.db", other).Error(); strings.Contains(got, "replica") {
			t.Errorf("%s(%v): %q, not a replica's refusal", f.name, other, got)
		}
	}
}
