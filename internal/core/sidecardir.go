package core

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cleocode/cleolease/internal/platform"
)

// A LiteFS mount keeps only SQLite's own files, and its locks outside
// SQLite's lock bytes are not seen from another open file, so the
// liveness files of a database there cannot live beside it. Given no
// _lease_sidecar_dir, the connector puts them in a local directory that
// every process of the host derives the same way (derivedSidecarDir), and
// the lease engine proves that they did (lease/sidecarproof.go: a nonce
// kept there and recorded in the database; ErrSidecarDir when a process
// derived another directory).

// derivedSidecarDir returns the local directory for the liveness files of
// databases on a LiteFS mount: "cleolease" in the temporary directory
// (os.TempDir: $TMPDIR, else /tmp), created world-writable with the
// sticky bit, as /tmp is, so that processes of several users can share
// it (each file keeps its database's permission bits). Tests replace it.
var derivedSidecarDir = func() (string, error) {
	dir := platform.LiteFSSidecarDir()
	err := os.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		// Mkdir's mode passes through the umask; Chmod's does not.
		if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
			return "", err
		}
	case !errors.Is(err, fs.ErrExist):
		return "", err
	}
	return dir, nil
}

// sidecarDir is where the connector's lease engine keeps its liveness
// files: Config.SidecarDir when given; on a LiteFS mount otherwise the
// derived directory (derived true), created when missing; else "" (beside
// the database). The caller holds c.mu.
func (c *Connector) sidecarDir() (dir string, derived bool, err error) {
	if c.cfg.SidecarDir != "" || !c.liteFS {
		return c.cfg.SidecarDir, false, nil
	}
	dir, err = derivedSidecarDir()
	if err != nil {
		return "", false, fmt.Errorf("cleolease: %s is on a LiteFS mount and its liveness files need a local directory: %w (or set _lease_sidecar_dir)", c.path, err)
	}
	return dir, true, nil
}
