package core

import (
	"bytes"
	"database/sql"
	"log"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

// TestNewLogger: with no Config.Logger, records at warning level and above
// reach the slog.Default() of the moment they are logged (set after the
// logger was made), with the attributes and groups added on the way, and
// debug and info records are dropped; Config.Logger gets everything; Quiet
// drops everything, Config.Logger's records included.
func TestNewLogger(t *testing.T) {
	prev, out, flags := slog.Default(), log.Writer(), log.Flags()
	t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(out)
		log.SetFlags(flags)
	})
	l := newLogger(&Config{}).With("path", "/x.db").WithGroup("g")
	var def bytes.Buffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Debug("d")
	l.Info("i")
	l.Warn("w", "lane", "default")
	l.Error("e")
	got := def.String()
	for _, want := range []string{`msg=w path=/x.db g.lane=default`, `msg=e path=/x.db`} {
		if !strings.Contains(got, want) {
			t.Errorf("slog.Default() got %q; want %q in it", got, want)
		}
	}
	if strings.Contains(got, "msg=d") || strings.Contains(got, "msg=i") {
		t.Errorf("slog.Default() got debug or info records: %q", got)
	}

	var own bytes.Buffer
	mine := slog.New(slog.NewTextHandler(&own, &slog.HandlerOptions{Level: slog.LevelDebug}))
	def.Reset()
	newLogger(&Config{Logger: mine}).Debug("d")
	if !strings.Contains(own.String(), "msg=d") || def.Len() != 0 {
		t.Errorf("Config.Logger got %q, slog.Default() %q; want the debug record in the former only", own.String(), def.String())
	}
	own.Reset()
	newLogger(&Config{Logger: mine, Quiet: true}).Warn("w")
	newLogger(&Config{Quiet: true}).Warn("w")
	if own.Len() != 0 || def.Len() != 0 {
		t.Errorf("Quiet logged %q to Config.Logger and %q to slog.Default(); want nothing", own.String(), def.String())
	}
}

// TestFilesystemWarningsWithoutLogger: with no Config.Logger, the warnings
// at the first connect to a database on a FUSE filesystem, or on a network
// filesystem allowed by _lease_network_fs=allow, reach slog.Default(),
// naming the directory and the filesystem; _lease_quiet=true silences them.
func TestFilesystemWarningsWithoutLogger(t *testing.T) {
	prev, out, flags := slog.Default(), log.Writer(), log.Flags()
	t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(out)
		log.SetFlags(flags)
	})
	var def logBuffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	for _, tc := range []struct {
		info  platform.FSInfo
		query string
		want  string
	}{
		{platform.FSInfo{Name: "fuse.sometool", FUSE: true}, "", "FUSE"},
		{platform.FSInfo{Name: "nfs4", Network: true}, "?_lease_network_fs=allow", "network filesystem"},
	} {
		for _, quiet := range []bool{false, true} {
			dir := testdir.New(t)
			fakeFS(t, dir, tc.info, nil)
			def.mu.Lock()
			def.b.Reset()
			def.mu.Unlock()
			dsn := "file:" + filepath.Join(dir, "app.db") + tc.query
			if quiet {
				sep := "?"
				if tc.query != "" {
					sep = "&"
				}
				dsn += sep + "_lease_quiet=true"
			}
			db, err := sql.Open("cleolease", dsn)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
				t.Fatalf("%s: %v", dsn, err)
			}
			db.Close()
			s := def.String()
			switch {
			case quiet && s != "":
				t.Errorf("%s: slog.Default() got %q; want nothing", dsn, s)
			case !quiet && (!strings.Contains(s, "level=WARN") || !strings.Contains(s, tc.want) || !strings.Contains(s, "fs="+tc.info.Name) || !strings.Contains(s, "dir=")):
				t.Errorf("%s: slog.Default() got %q; want a warning about the %s naming the directory and the filesystem", dsn, s, tc.want)
			}
		}
	}
}
