package base_test

import (
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	_ "github.com/ncruces/go-sqlite3/vfs/memdb" // registers "memdb"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

// fileURI returns a "file:" URI naming path, with query.
func fileURI(path, query string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter: file:///C:/…
	}
	return (&url.URL{Scheme: "file", Path: p, RawQuery: query}).String()
}

// validDSNs are DSNs ncruces opens, as Check accepts them; "D" stands for
// a directory of the test's.
var validDSNs = []string{
	"D/plain.db",
	"file:D/a.db",
	"file:D/b.db?",
	"file:D/c.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate&_timefmt=sqlite",
	"file:D/d.db?_pragma=busy_timeout%3D5000&_pragma=main.synchronous(%27normal%27)&_pragma=foreign_keys(1)%3B",
	"file:D/e.db?_pragma=cache_size(-2000)&_pragma=locking_mode(EXCLUSIVE)&_txlock=deferred",
	"file:D/f.db?_txlock=exclusive&_txlock=concurrent&_timefmt=2006-01-02",
	"file:D/g.db?_txlock=&cache=private&psow=1&mode=rwc",
	"file:D/h.db?mode=rwc&cache=shared&other=ignored",
	"file:D/i.db?vfs=memdb",
	"file:D/j.db?_pragma=journal_mode=TRUNCATE#frag",
	"file:///D/k.db?mode=rwc",
	"file://localhost/D/l.db",
	":memory:",
	"file::memory:?cache=shared",
	"file:mem?mode=memory&cache=shared",
	"",
}

// expand replaces the "D" of a validDSNs entry with dir.
func expand(dsn, dir string) string {
	d := filepath.ToSlash(dir)
	switch {
	case strings.HasPrefix(dsn, "D/"):
		return filepath.Join(dir, dsn[2:])
	case strings.HasPrefix(dsn, "file:D/"):
		return "file:" + d + dsn[len("file:D"):]
	case strings.HasPrefix(dsn, "file:///D/"):
		return "file://" + d + dsn[len("file:///D"):]
	case strings.HasPrefix(dsn, "file://localhost/D/"):
		return "file://localhost" + d + dsn[len("file://localhost/D"):]
	}
	return dsn
}

func TestCheck(t *testing.T) {
	for _, dsn := range validDSNs {
		dsn = expand(dsn, "/tmp")
		if err := (base.Dialect{}).Check(dsn); err != nil {
			t.Errorf("Check(%q): %v", dsn, err)
		}
	}
	for _, tc := range []struct{ dsn, param, value string }{
		// ncruces reads no parameter of a plain name: SQLite would open
		// a file named after the whole DSN.
		{"x.db?_pragma=busy_timeout(5000)", "_pragma", ""},
		{"x.db?mode=ro", "mode", ""},
		{"x.db?", "", ""},
		// Underscore parameters ncruces does not read: typos.
		{"file:x.db?_pragmas=busy_timeout(5000)", "_pragmas", ""},
		{"file:x.db?_txlok=immediate", "_txlok", ""},
		{"file:x.db?_busy_timeout=5000", "_busy_timeout", ""},
		{"file:x.db?_journal_mode=WAL", "_journal_mode", ""},
		{"file:x.db?_time_format=sqlite", "_time_format", ""},
		// Values ncruces or SQLite refuse.
		{"file:x.db?_txlock=bogus", "_txlock", "bogus"},
		{"file:x.db?_txlock=IMMEDIATE", "_txlock", "IMMEDIATE"},
		{"file:x.db?mode=RO", "mode", "RO"},
		{"file:x.db?mode=bogus", "mode", "bogus"},
		{"file:x.db?cache=none", "cache", "none"},
		{"file://host/x.db", "file: URI authority", "host"},
		// A _pragma that is not one PRAGMA statement.
		{"file:x.db?_pragma=", "_pragma", ""},
		{"file:x.db?_pragma=%20", "_pragma", ""},
		{"file:x.db?_pragma=foreign_keys(1)%3BATTACH%20%27y.db%27%20AS%20y", "_pragma", "foreign_keys"},
		{"file:x.db?_pragma=foreign_keys(1", "_pragma", "foreign_keys"},
		{"file:x.db?_pragma=(1)", "_pragma", ""},
		// A PRAGMA name neither SQLite nor ncruces's default VFS knows.
		{"file:x.db?_pragma=busy_timout(5000)", "_pragma", "busy_timout"},
		{"file:x.db?vfs=memdb&_pragma=journal_mod(WAL)", "_pragma", "journal_mod"},
	} {
		err := (base.Dialect{}).Check(tc.dsn)
		var pe *sqlbase.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param || pe.Value != tc.value {
			t.Errorf("Check(%q) = %#v; want a *ParamError for %q, value %q", tc.dsn, err, tc.param, tc.value)
		}
	}
	// Names a VFS may answer itself: ncruces's default VFS's own, and any
	// under a VFS of the application's.
	for _, dsn := range []string{"file:x.db?_pragma=checksum_verification(1)", "file:x.db?vfs=adiantum&_pragma=hexkey('00')"} {
		if err := (base.Dialect{}).Check(dsn); err != nil {
			t.Errorf("Check(%q): %v", dsn, err)
		}
	}
	// What url.Parse or url.ParseQuery refuses is their error, as
	// ncruces's.
	for _, dsn := range []string{"file:x.db?_pragma=%zz", "file:x.db?%zz=1", "file:x.db?a=1;b=2"} {
		err := (base.Dialect{}).Check(dsn)
		var pe *sqlbase.ParamError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("Check(%q) = %v; want url's error", dsn, err)
		}
		if _, nerr := sql.Open("sqlite3", dsn); nerr == nil || nerr.Error() != err.Error() {
			t.Errorf("Check(%q) = %v; ncruces's sql.Open: %v", dsn, err, nerr)
		}
	}
}

// Check's rejections fall in two classes: DSNs ncruces refuses too (at
// sql.Open or at the first connection), and DSNs it opens while ignoring
// what they ask (typos, a plain name's parameters, a _pragma's second
// statement). Every DSN Check accepts, ncruces opens.
func TestCheckAgreesWithNcruces(t *testing.T) {
	dir := testdir.New(t)
	n := 0
	path := func() string {
		n++
		return filepath.ToSlash(filepath.Join(dir, "c"+strings.Repeat("x", n)+".db"))
	}
	open := func(dsn string) error {
		db, err := sql.Open("sqlite3", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}
	for _, tc := range []struct {
		query   string
		uri     bool
		refused bool // by ncruces too
	}{
		{"_txlock=bogus", true, true},
		{"_txlock=IMMEDIATE", true, true},
		{"mode=RO", true, true},
		{"mode=bogus", true, true},
		{"cache=none", true, true},
		{"_pragma=", true, true},
		{"_pragma=%20", true, true},
		{"_pragma=foreign_keys(1", true, true},
		{"_pragma=(1)", true, true},
		{"_pragma=foreign_keys(1)%3Bbogus", true, true},
		{"_pragma=%zz", true, true},
		{"_pragmas=busy_timeout(5000)", true, false},
		{"_txlok=immediate", true, false},
		{"_busy_timeout=5000", true, false},
		{"_pragma=foreign_keys(1)%3BSELECT%201", true, false},
		{"_pragma=busy_timeout(5000)", false, false},
		{"mode=ro", false, false},
	} {
		if !tc.uri && runtime.GOOS == "windows" {
			continue // no '?' in a Windows file name
		}
		p := path()
		dsn := p + "?" + tc.query
		if tc.uri {
			dsn = "file:" + dsn
		}
		if (base.Dialect{}).Check(dsn) == nil {
			t.Errorf("Check(%q): no error", dsn)
		}
		err := open(dsn)
		if refused := err != nil; refused != tc.refused {
			t.Errorf("ncruces's open of %q: %v; refused %v, want %v", dsn, err, refused, tc.refused)
		}
	}
	for _, dsn := range validDSNs {
		dsn = expand(dsn, dir)
		if err := (base.Dialect{}).Check(dsn); err != nil {
			t.Errorf("Check(%q): %v", dsn, err)
		}
		if err := open(dsn); err != nil {
			t.Errorf("ncruces's open of %q, which Check accepts: %v", dsn, err)
		}
	}
	// A plain name's parameters are part of the name.
	if runtime.GOOS != "windows" {
		p := path()
		if err := open(p + "?mode=ro"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p + "?mode=ro"); err != nil {
			t.Errorf("ncruces did not open a file named after the whole plain DSN: %v", err)
		}
	}
}

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want sqlbase.Target
		err  bool
	}{
		{"", sqlbase.Target{}, false},
		{"x.db", sqlbase.Target{Path: "x.db"}, false},
		{"x.db?mode=ro", sqlbase.Target{Path: "x.db?mode=ro"}, false}, // a plain name, whole
		{"x.db?_pragma=query_only(1)", sqlbase.Target{Path: "x.db?_pragma=query_only(1)"}, false},
		{":memory:", sqlbase.Target{Path: ":memory:", Memory: true}, false},
		{"file:x.db", sqlbase.Target{Path: "x.db"}, false},
		{"file:x.db?mode=ro", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"file:x.db?mode=rw&mode=ro", sqlbase.Target{Path: "x.db", ReadOnly: true}, false}, // SQLite applies each in turn
		{"file:x.db?immutable=1", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"file:x.db?immutable=0&immutable=1", sqlbase.Target{Path: "x.db"}, false}, // sqlite3_uri_boolean reads the first
		{"file:x.db?_pragma=query_only(1)", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"file:x.db?_pragma=query_only=yes", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"file:x.db?_pragma=query_only(1)&_pragma=query_only(0)", sqlbase.Target{Path: "x.db"}, false},
		{"file:x.db?_pragma=temp.query_only(1)", sqlbase.Target{Path: "x.db"}, false},
		{"file:x.db?nolock=1&nolock=0", sqlbase.Target{Path: "x.db", NoLock: true}, false},
		{"file:x.db?vfs=unix-dotfile", sqlbase.Target{Path: "x.db", VFS: "unix-dotfile"}, false},
		{"file::memory:?cache=shared", sqlbase.Target{Path: ":memory:", Memory: true}, false}, // no shared cache in ncruces
		{"file:m?mode=memory&cache=shared", sqlbase.Target{Path: "m", Memory: true}, false},
		{"file:m?mode=memory", sqlbase.Target{Path: "m", Memory: true}, false},
		{"file:/m?vfs=memdb", sqlbase.Target{Path: "/m", Memory: true, Shared: true, VFS: "memdb"}, false},
		{"file:m?vfs=memdb", sqlbase.Target{Path: "m", Memory: true, VFS: "memdb"}, false},
		{"file:x.db?_pragma=locking_mode(EXCLUSIVE)", sqlbase.Target{Path: "x.db", Locking: "EXCLUSIVE", LockingParam: "_pragma"}, false},
		{"file:x.db?_pragma=locking_mode=exclusive", sqlbase.Target{Path: "x.db", Locking: "EXCLUSIVE", LockingParam: "_pragma"}, false},
		{"file:x.db?_pragma=main.locking_mode(%27exclusive%27)", sqlbase.Target{Path: "x.db", Locking: "EXCLUSIVE", LockingParam: "_pragma"}, false},
		{"file:x.db?_pragma=temp.locking_mode(EXCLUSIVE)", sqlbase.Target{Path: "x.db"}, false},
		{"file:x.db?_pragma=locking_mode(EXCLUSIVE)&_pragma=locking_mode(NORMAL)", sqlbase.Target{Path: "x.db", Locking: "NORMAL", LockingParam: "_pragma"}, false},
		{"file:///tmp/a%20b.db?mode=ro#frag", sqlbase.Target{Path: "/tmp/a b.db", ReadOnly: true}, false},
		{"file:a%3Fb%23c.db", sqlbase.Target{Path: "a?b#c.db"}, false},
		{"file:", sqlbase.Target{}, false},
		{"file://host/x.db", sqlbase.Target{}, true},
	} {
		got, err := (base.Dialect{}).Target(tc.dsn)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Target(%q) = %+v, %v; want %+v, error %v", tc.dsn, got, err, tc.want, tc.err)
		}
	}
}

func TestJournalMode(t *testing.T) {
	for dsn, want := range map[string]string{
		"x.db":                                        "",
		"x.db?_pragma=journal_mode(WAL)":              "", // a plain name: no parameter
		"file:x.db":                                   "",
		"file:x.db?_pragma=journal_mode(wal)":         "WAL",
		"file:x.db?_pragma=journal_mode='wal'":        "WAL",
		"file:x.db?_pragma=journal_mode":              "", // a question sets nothing
		"file:x.db?_pragma=main.journal_mode(MEMORY)": "MEMORY",
		"file:x.db?_pragma=journal_mode(DELETE)&_pragma=journal_mode(WAL)":       "WAL",
		"file:x.db?_pragma=journal_mode(WAL)&_pragma=journal_mode(DELETE)":       "DELETE", // ncruces runs them in order
		"file:x.db?_pragma=journal_mode(TRUNCATE)&_pragma=journal_mode(PERSIST)": "PERSIST",
		"file:x.db?_pragma=temp.journal_mode(WAL)":                               "",
		"file:x.db?_pragma=journal_mode(bogus)":                                  "",
		"file:x.db?_pragma=journal_mode(off)":                                    "OFF",
	} {
		if got := (base.Dialect{}).JournalMode(dsn); got != want {
			t.Errorf("JournalMode(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// What Target and JournalMode say is what ncruces opens.
func TestTargetMatchesNcruces(t *testing.T) {
	dir := testdir.New(t)
	existing := newFile(t)
	n := 0
	fresh := func(query string) string {
		n++
		return fileURI(filepath.Join(dir, "f"+strings.Repeat("x", n)+".db"), query)
	}
	for _, dsn := range []string{
		fileURI(existing, "mode=ro"),
		fileURI(existing, "immutable=1"),
		fileURI(existing, "mode=rw&mode=ro"),
		fresh("_pragma=query_only(1)"),
		fresh("_pragma=query_only(1)&_pragma=query_only(0)"),
		fresh("_pragma=query_only=on"),
		fresh("_pragma=locking_mode(EXCLUSIVE)&_pragma=locking_mode(NORMAL)"),
		fresh("_pragma=locking_mode=exclusive"),
		fresh("_pragma=journal_mode(WAL)&_pragma=journal_mode(DELETE)"),
		fresh("_pragma=journal_mode(DELETE)&_pragma=journal_mode(WAL)"),
		fresh("_pragma=journal_mode(TRUNCATE)&_pragma=journal_mode(PERSIST)"),
		":memory:",
		"file::memory:",
		"file::memory:?cache=shared",
		"file:tm?mode=memory&cache=shared",
		"file:/tm?vfs=memdb",
		"file:tm2?vfs=memdb",
	} {
		tg, err := (base.Dialect{}).Target(dsn)
		if err != nil {
			t.Fatalf("Target(%q): %v", dsn, err)
		}
		c, ro, err := base.For(nil).Open(dsn, true)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		t.Cleanup(func() { c.Close() })
		if got := ro || queryValue(t, c, "PRAGMA query_only") == int64(1); got != tg.ReadOnly {
			t.Errorf("%q: ncruces opens it read-only %v; Target.ReadOnly %v", dsn, got, tg.ReadOnly)
		}
		locking := strings.ToUpper(queryValue(t, c, "PRAGMA locking_mode").(string))
		if tg.Locking != "" && tg.Locking != locking || tg.Locking == "" && locking != "NORMAL" {
			t.Errorf("%q: locking_mode %s; Target.Locking %q", dsn, locking, tg.Locking)
		}
		file := queryValue(t, c, "SELECT file FROM pragma_database_list WHERE name = 'main'")
		if memory := file == ""; memory != tg.Memory && tg.VFS != "memdb" {
			t.Errorf("%q: ncruces's main file %q; Target.Memory %v", dsn, file, tg.Memory)
		}
		if tg.Memory {
			// Shared: a second connection sees the first's table.
			execNoArgs(t, c, "CREATE TABLE probe(x)")
			c2 := openConn(t, base.For(nil), dsn)
			if shared := queryValue(t, c2, "SELECT count(*) FROM sqlite_schema WHERE name = 'probe'") == int64(1); shared != tg.Shared {
				t.Errorf("%q: a second connection shares the database %v; Target.Shared %v", dsn, shared, tg.Shared)
			}
		}
		if jm := (base.Dialect{}).JournalMode(dsn); jm != "" {
			if got := strings.ToUpper(queryValue(t, c, "PRAGMA journal_mode").(string)); got != jm {
				t.Errorf("%q: journal_mode %s; JournalMode %s", dsn, got, jm)
			}
		}
	}
}

func TestWithDefaults(t *testing.T) {
	const (
		busy  = "_pragma=busy_timeout(30000)"
		sync  = "_pragma=synchronous(NORMAL)"
		fk    = "_pragma=foreign_keys(1)"
		wal   = "_pragma=journal_mode(WAL)"
		noWAL = busy + "&" + sync + "&" + fk
	)
	walDefault := "&" + wal
	if buildTag == "sqlite3_dotlk" {
		walDefault = "" // ncruces's dotlk WAL index is per process: no WAL default
	}
	all := noWAL + walDefault
	for _, tc := range []struct {
		dsn    string
		onDisk bool
		want   string
	}{
		{"", true, ""},
		// A plain name becomes the file: URI of the same file.
		{"x.db", true, "file:x.db?" + all},
		{"x.db", false, "file:x.db?" + noWAL},
		{"dir/x.db", true, "file:dir/x.db?" + all},
		{"/abs/x.db", true, "file:/abs/x.db?" + all},
		{"a%b?c#d.db", true, "file:a%25b%3Fc%23d.db?" + all},
		{"a b.db", true, "file:a%20b.db?" + all},
		{":memory:", true, "file::memory:?" + noWAL},
		// A file: URI keeps its bytes; the defaults follow its query.
		{"file:x.db", true, "file:x.db?" + all},
		{"file:x.db?", true, "file:x.db?" + all},
		{"file:x.db?_txlock=immediate&", true, "file:x.db?_txlock=immediate&" + all},
		{"file:x.db?_txlock=immediate", true, "file:x.db?_txlock=immediate&" + all},
		{"file:x.db#frag", true, "file:x.db?" + all + "#frag"},
		{"file:x.db?mode=rwc#frag", true, "file:x.db?mode=rwc&" + all + "#frag"},
		{"file:x.db?mode=ro", true, "file:x.db?mode=ro&" + noWAL},
		{"file:x.db?immutable=1", true, "file:x.db?immutable=1&" + noWAL},
		{"file:x.db?_pragma=query_only(1)", true, "file:x.db?_pragma=query_only(1)&" + noWAL},
		{"file::memory:?cache=shared", true, "file::memory:?cache=shared&" + noWAL},
		{"file:m?mode=memory", true, "file:m?mode=memory&" + noWAL},
		{"file:/m?vfs=memdb", true, "file:/m?vfs=memdb&" + noWAL},
		{"file:", true, "file:?" + noWAL},
		// The DSN's own settings win, in any form and any schema.
		{"file:x.db?_pragma=busy_timeout(1)&_pragma=synchronous=OFF&_pragma=foreign_keys(0)&_pragma=journal_mode(DELETE)", true,
			"file:x.db?_pragma=busy_timeout(1)&_pragma=synchronous=OFF&_pragma=foreign_keys(0)&_pragma=journal_mode(DELETE)"},
		{"file:x.db?_pragma=BUSY_TIMEOUT%3D5000", true, "file:x.db?_pragma=BUSY_TIMEOUT%3D5000&" + sync + "&" + fk + walDefault},
		{"file:x.db?_pragma=main.synchronous(OFF)", true, "file:x.db?_pragma=main.synchronous(OFF)&" + busy + "&" + fk + walDefault},
		{"file:x.db?_pragma=journal_mode", true, "file:x.db?_pragma=journal_mode&" + all}, // a question sets nothing
	} {
		if got := (base.Dialect{}).WithDefaults(tc.dsn, tc.onDisk); got != tc.want {
			t.Errorf("WithDefaults(%q, %v) =\n\t%q, want\n\t%q", tc.dsn, tc.onDisk, got, tc.want)
		}
	}
}

// settings are the PRAGMAs WithDefaults sets, as a connection reads them.
type settings struct {
	busy    int64
	journal string
	sync    int64
	fk      int64
}

func readSettings(t *testing.T, c sqlbase.Conn) settings {
	t.Helper()
	return settings{
		busy:    queryValue(t, c, "PRAGMA busy_timeout").(int64),
		journal: queryValue(t, c, "PRAGMA journal_mode").(string),
		sync:    queryValue(t, c, "PRAGMA synchronous").(int64),
		fk:      queryValue(t, c, "PRAGMA foreign_keys").(int64),
	}
}

// defaultJournal is the journal mode a writable file gets by default: WAL,
// but in a build with sqlite3_dotlk (walByDefault) SQLite's own, delete.
func defaultJournal() string {
	if buildTag == "sqlite3_dotlk" {
		return "delete"
	}
	return "wal"
}

// Every DSN WithDefaults produces opens with ncruces with the defaults in
// force, and the caller's own settings win.
func TestWithDefaultsOpen(t *testing.T) {
	dir := testdir.New(t)
	defaults := settings{30000, defaultJournal(), 1, 1}
	for i, tc := range []struct {
		query string
		want  settings
	}{
		{"", defaults},
		{"_txlock=immediate&_timefmt=sqlite", defaults},
		{"cache=private&mode=rwc", defaults},
		{"_pragma=busy_timeout(5000)&_pragma=journal_mode(DELETE)&_pragma=synchronous(FULL)&_pragma=foreign_keys(0)", settings{5000, "delete", 2, 0}},
		{"_pragma=busy_timeout%3D7&_pragma=journal_mode(TRUNCATE)&_pragma=synchronous(OFF)&_pragma=foreign_keys=off", settings{7, "truncate", 0, 0}},
	} {
		dsn := fileURI(filepath.Join(dir, "d"+strings.Repeat("x", i)+".db"), tc.query)
		if err := (base.Dialect{}).Check(dsn); err != nil {
			t.Fatalf("Check(%q): %v", dsn, err)
		}
		full := (base.Dialect{}).WithDefaults(dsn, true)
		if err := (base.Dialect{}).Check(full); err != nil {
			t.Errorf("Check(WithDefaults(%q)): %v", dsn, err)
		}
		wantJM := strings.ToUpper(tc.want.journal)
		if !strings.Contains(tc.query, "journal_mode") && buildTag == "sqlite3_dotlk" {
			wantJM = "" // no WAL default: the DSN sets no journal mode
		}
		if jm := (base.Dialect{}).JournalMode(full); jm != wantJM {
			t.Errorf("JournalMode(%q) = %q", full, jm)
		}
		if got := readSettings(t, openConn(t, base.For(nil), full)); got != tc.want {
			t.Errorf("%q opens with %+v, want %+v", full, got, tc.want)
		}
	}

	// A file opened read-only gets the defaults that write nothing, and
	// opens (journal_mode=WAL would fail it with SQLITE_READONLY).
	ro := fileURI(newFile(t), "mode=ro")
	if got := readSettings(t, openConn(t, base.For(nil), (base.Dialect{}).WithDefaults(ro, true))); got != (settings{30000, "delete", 1, 1}) {
		t.Errorf("%q opens with %+v", ro, got)
	}
	_, _, err := base.For(nil).Open(ro+"&_pragma=journal_mode(WAL)", false)
	if code, ok := sqlbase.Code(err); !ok || code.Code != sqlbase.ReadOnly {
		t.Errorf("journal_mode(WAL) on a mode=ro file: %v; want SQLITE_READONLY", err)
	}
	// In memory: no WAL asked, the rest set.
	if got := readSettings(t, openConn(t, base.For(nil), (base.Dialect{}).WithDefaults(":memory:", true))); got != (settings{30000, "memory", 1, 1}) {
		t.Errorf(":memory: opens with %+v", got)
	}
}

// A plain name (ncruces reads no parameter of one), relative or with
// characters a URI reserves, becomes a file: URI that opens the same file
// as the name alone does, with the defaults in force.
func TestWithDefaultsPlainNameSameFile(t *testing.T) {
	dir := testdir.New(t)
	t.Chdir(dir)
	if err := os.Mkdir("dir", 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"dir/x.db", "a b.db", "p%41ct.db", "h#sh.db", filepath.Join(dir, "abs %2e.db")}
	if runtime.GOOS != "windows" {
		names = append(names, "q?mode=ro.db", "all %25 ? # &.db")
	}
	for i, name := range names {
		// The name alone, as ncruces opens it.
		plain := openDB(t, name)
		if _, err := plain.Exec("CREATE TABLE t(x)"); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if _, err := plain.Exec("INSERT INTO t VALUES (?)", i); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		plain.Close()
		if _, err := os.Stat(name); err != nil {
			t.Fatalf("ncruces did not create %q: %v", name, err)
		}
		full := (base.Dialect{}).WithDefaults(name, true)
		if err := (base.Dialect{}).Check(full); err != nil {
			t.Errorf("Check(WithDefaults(%q)) = %v", name, err)
		}
		c := openConn(t, base.For(nil), full)
		if got := queryValue(t, c, "SELECT x FROM t"); got != int64(i) {
			t.Errorf("WithDefaults(%q) = %q reads %v, want %d: another file", name, full, got, i)
		}
		if got := readSettings(t, c); got != (settings{30000, defaultJournal(), 1, 1}) {
			t.Errorf("%q opens with %+v", full, got)
		}
		c.Close()
	}
	// No other file was created.
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	if len(files) != len(names) {
		t.Errorf("files %q; want one per name %q", files, names)
	}
}
