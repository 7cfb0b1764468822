// Package testdir gives tests a temporary directory that is removed when
// the test ends, like testing.T.TempDir, and that Wine can remove too.
//
// Under Wine 8, testing.T.TempDir's cleanup fails ("unlinkat ...:
// Invalid function"): Go's os.RemoveAll on Windows deletes with POSIX
// semantics (SetFileInformationByHandle with
// FILE_DISPOSITION_INFO_EX and FILE_DISPOSITION_FLAG_POSIX_SEMANTICS),
// which Wine 8 does not implement. This is a gap of Wine, not of Windows:
// Windows 10 1709 and later implement it
// (https://learn.microsoft.com/windows/win32/api/winbase/ns-winbase-file_disposition_info_ex),
// and on older Windows Go falls back itself. New falls back to plain
// deletion (DeleteFile and RemoveDirectory through os.Remove) when
// os.RemoveAll fails.
package testdir

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// TB is the part of testing.TB that New uses.
type TB interface {
	Helper()
	Name() string
	TempDir() string
	Cleanup(func())
	Fatal(args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// New returns a new empty directory that is removed, with everything in
// it, when the test ends. Outside Windows it is t.TempDir().
func New(t TB) string {
	t.Helper()
	if runtime.GOOS != "windows" {
		return t.TempDir()
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == '*' || r == '?' || r == '"' || r == '<' || r == '>' || r == '|' {
			return '_'
		}
		return r
	}, t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := RemoveAll(dir)
		heldMu.Lock()
		why, ok := held[t]
		delete(held, t)
		heldMu.Unlock()
		switch {
		case err != nil && ok:
			t.Logf("testdir: %s left behind (%v): %s", dir, err, why)
		case err != nil:
			t.Errorf("testdir: removing %s: %v", dir, err)
		}
	})
	return dir
}

var (
	heldMu sync.Mutex
	held   = map[TB]string{}
)

// LeaveOpen tells New's cleanup that the test leaves a file of its
// directories open on purpose (why says which and why): on Windows, where
// an open file cannot be removed, what cannot be removed is then left in
// the temporary directory with a log line instead of failing the test.
// Call it before the test's first New, from the same test.
func LeaveOpen(t TB, why string) {
	heldMu.Lock()
	held[t] = why
	heldMu.Unlock()
}

// RemoveAll removes dir and everything in it: os.RemoveAll, then, where
// that fails (Wine, see the package comment), each entry with os.Remove,
// deepest first. Like testing's own cleanup on Windows, it tries again for
// up to 2 s while a file is still open (a child process that has not
// finished exiting).
func RemoveAll(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	var err error
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = removeEach(dir); err == nil || time.Now().After(deadline) {
			return err
		}
	}
}

// removeEach removes the entries under dir with os.Remove, files before
// the directories that hold them.
func removeEach(dir string) error {
	var paths []string
	walkErr := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	if walkErr != nil {
		return walkErr
	}
	slices.Reverse(paths)
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
