package main

import (
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
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
