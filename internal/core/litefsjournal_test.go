package core

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

// On a LiteFS mount (injected), a DSN that sets a rollback-journal mode is
// opened with a warning naming the file and the mode (the README says WAL
// only); WAL, given or by default, logs nothing. Before the fix
// rollback-journal mode on LiteFS was silent.
func TestLiteFSJournalModeWarning(t *testing.T) {
	derived := testdir.New(t)
	orig := derivedSidecarDir
	derivedSidecarDir = func() (string, error) { return derived, nil }
	t.Cleanup(func() { derivedSidecarDir = orig })
	for _, tc := range []struct {
		param string
		warn  bool
	}{{"_journal_mode=DELETE", true}, {"_journal=truncate", true}, {"_journal_mode=WAL", false}, {"", false}} {
		dir := testdir.New(t)
		fakeFS(t, dir, platform.FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true}, nil)
		path := filepath.Join(dir, "app.db")
		db, logs := openWithLog(t, "file:"+path+"?"+tc.param)
		if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
			t.Fatal(err)
		}
		s := logs.String()
		got := strings.Contains(s, "level=WARN") && strings.Contains(s, "rollback-journal") && strings.Contains(s, path)
		if got != tc.warn || (!tc.warn && strings.Contains(s, "level=WARN")) {
			t.Errorf("%q: log %q; want a warning naming the file: %v", tc.param, s, tc.warn)
		}
	}
}
