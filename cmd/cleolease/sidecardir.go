package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/lease"
)

// detectFileSystem reports the filesystem holding a directory; tests
// replace it.
var detectFileSystem = platform.FileSystem

// sidecarDirFor is where the processes of the database at path keep their
// liveness files: given (--sidecar-dir) when not empty; for a database on
// a LiteFS mount, the directory the connector derives there
// (platform.LiteFSSidecarDir); else "" (beside the database).
func sidecarDirFor(path, given string) string {
	if given != "" {
		return given
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	if info, err := detectFileSystem(filepath.Dir(abs)); err == nil && info.LiteFS {
		return platform.LiteFSSidecarDir()
	}
	return ""
}

// engineOptions are the lease.Options of a command that writes to the
// database at path (migrate, break) through dsn, with its liveness files
// where the processes keep theirs: --sidecar-dir (given) when not empty;
// on a LiteFS mount the directory the connector derives there, created
// as the connector creates it (world-writable, sticky) and proven shared
// by the same nonce (SidecarDirDerived), and nothing created in the mount
// (which would take a new file for a database and replicate it).
func engineOptions(path, dsn, given string) (lease.Options, error) {
	o := lease.Options{Base: mattn.For(nil), Path: path, DSN: dsn, SidecarDir: given}
	abs, err := filepath.Abs(path)
	if err != nil {
		return o, err
	}
	info, err := detectFileSystem(filepath.Dir(abs))
	if err != nil || !info.LiteFS {
		return o, nil
	}
	o.Replicated = true
	if given != "" {
		return o, nil
	}
	dir := platform.LiteFSSidecarDir()
	switch err := os.Mkdir(dir, 0o700); {
	case err == nil:
		if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
			return o, err
		}
	case !errors.Is(err, fs.ErrExist):
		return o, err
	}
	o.SidecarDir, o.SidecarDirDerived = dir, true
	return o, nil
}

// readPrimary reads the .primary file of the LiteFS mount holding path
// (the primary's name; the file exists only on a replica connected to a
// primary); tests replace it.
var readPrimary = func(path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(abs), ".primary"))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// replicaFailure is the failure of a write by a command (migrate, break)
// on a LiteFS replica: err is SQLite's refusal of the write
// (lease.WriteRefused) or the sidecar proof's refusal (lease.ErrSidecarDir:
// the primary, on this host, recorded its nonce), and the mount names a
// primary. It returns nil for any other error.
func replicaFailure(path string, err error) error {
	if !lease.WriteRefused(err) && !errors.Is(err, lease.ErrSidecarDir) {
		return nil
	}
	primary, ok := readPrimary(path)
	if !ok {
		return nil
	}
	return failf("%s is a LiteFS replica: writes go to the primary, %s; run this there (%v)", path, primary, err)
}
