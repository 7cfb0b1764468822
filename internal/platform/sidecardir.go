package platform

import (
	"os"
	"path/filepath"
)

// LiteFSSidecarDir is the local directory that every process of a host
// derives for the liveness files of databases on a LiteFS mount given no
// _lease_sidecar_dir: "cleolease" in the temporary directory (os.TempDir:
// $TMPDIR, else /tmp). It only names the directory; the connector creates
// it (sidecardir.go in package cleolease), tools only read it.
func LiteFSSidecarDir() string { return filepath.Join(os.TempDir(), "cleolease") }
