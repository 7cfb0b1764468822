//go:build linux

package platform

import (
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// FileSystem on this machine's temporary directory and /proc: both local,
// neither FUSE, and a missing directory is an error rather than a guess.
func TestFileSystemHere(t *testing.T) {
	for _, dir := range []string{testdir.New(t), "/proc"} {
		info, err := FileSystem(dir)
		if err != nil {
			t.Fatalf("FileSystem(%s): %v", dir, err)
		}
		if info.Network {
			t.Errorf("FileSystem(%s) = %+v: this test expects a local directory", dir, info)
		}
	}
	if _, err := FileSystem(filepath.Join(testdir.New(t), "missing")); err == nil {
		t.Errorf("FileSystem of a missing directory: no error")
	}
}
