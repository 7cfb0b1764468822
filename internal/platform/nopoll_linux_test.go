package platform

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// The poller-free opens answer as os.ReadFile and os.OpenFile do: the
// content whole (past the first buffer's 512 bytes), and errors that
// errors.Is matches as it matches os's (fs.ErrNotExist, fs.ErrExist; the
// same errno wrapping gives openSidecar its fs.ErrPermission and EROFS).
func TestNoPollFilesAnswerAsOs(t *testing.T) {
	dir := testdir.New(t)
	p := filepath.Join(dir, "f")
	want := bytes.Repeat([]byte("0123456789"), 300)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readFileNoPoll(p)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("readFileNoPoll: %d bytes, %v; want the file's %d", len(got), err, len(want))
	}
	if _, err := readFileNoPoll(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("readFileNoPoll of a missing file: %v; want fs.ErrNotExist", err)
	}
	f, err := openFileNoPoll(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 7); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil || fi.Size() != 8 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("openFileNoPoll's file: %v, %v; want 8 bytes, mode 0600", fi, err)
	}
	if _, err := openFileNoPoll(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("openFileNoPoll with O_EXCL of an existing file: %v; want fs.ErrExist", err)
	}
}
