package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

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
	o := lease.Options{Path: path, DSN: dsn, SidecarDir: given}
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
