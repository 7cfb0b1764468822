package main

import (
	"path/filepath"

	"github.com/cleocode/cleolease/internal/platform"
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
