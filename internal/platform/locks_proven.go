//go:build (linux && !cleolease_portable) || windows

package platform

import (
	"os"
	"path/filepath"
	"sync"
)

// provenDirs remembers, for this process, the directories in which
// proveConflict found the lifetime lock seen from another open file of
// the sidecar, keyed with the filesystem holding them (fileFS): that
// filesystem honours the locks, and it keeps doing so. A process that
// opens the database per request (sql.Open, a query, Close: each open
// creates the sidecar again, since the last closer removes it) then pays
// the proof's open, test and close once, not at every open. Another
// filesystem mounted over the directory is another filesystem (fileFS),
// and is proved again.
var provenDirs sync.Map // provenDir → struct{}

// provenDir is a key of provenDirs.
type provenDir struct {
	dir string // the sidecar's directory, as its path names it
	fs  string // fileFS of the sidecar
}

// proveConflictOnce is proveConflict for the sidecar at path, open as f,
// skipped when its directory on its filesystem was proved before.
func proveConflictOnce(f *os.File, path string, slot int64) error {
	fsys, err := fileFS(f)
	if err != nil {
		return proveConflict(path, slot)
	}
	key := provenDir{dir: filepath.Dir(path), fs: fsys}
	if _, ok := provenDirs.Load(key); ok {
		return nil
	}
	if err := proveConflict(path, slot); err != nil {
		return err
	}
	provenDirs.Store(key, struct{}{})
	return nil
}
