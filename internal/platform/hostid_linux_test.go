//go:build linux

package platform

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SetTestBootID changes what BootID (and so Identity) report; the kernel's
// id comes back when the override is cleared.
func TestSetTestBootID(t *testing.T) {
	kernel := BootID()
	t.Cleanup(func() { testBootID.Store(nil) })
	SetTestBootID("node-b")
	if got := BootID(); got != "node-b" {
		t.Fatalf("BootID() = %q after SetTestBootID, want node-b", got)
	}
	if got := Identity(); !strings.HasPrefix(got, "node-b/") {
		t.Fatalf("Identity() = %q, want it to start with the test boot id", got)
	}
	testBootID.Store(nil)
	if got := BootID(); got != kernel {
		t.Fatalf("BootID() = %q after clearing, want the kernel's %q", got, kernel)
	}
}

// Only test files call SetTestBootID: a production build can never
// report another boot id than the kernel's.
func TestSetTestBootIDOnlyInTests(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "SetTestBootID(") && !strings.HasSuffix(p, "hostid_linux.go") {
			t.Errorf("%s calls SetTestBootID outside a test file", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
