package base

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
)

func TestModerncParamsSorted(t *testing.T) {
	if !slices.IsSorted(moderncParams) {
		t.Fatal("moderncParams is not sorted")
	}
}

// Every parameter in moderncParams is one modernc reads: a bad value
// fails its open, and Check rejects it naming the parameter (vfs, whose
// values only SQLite knows, excepted). An underscore parameter modernc
// does not read is ignored by modernc and rejected by Check.
func TestModerncParamsAreRead(t *testing.T) {
	drv := &sqlite.Driver{}
	for _, key := range moderncParams {
		dsn := ":memory:?" + key + "=bogus!"
		if c, err := drv.Open(dsn); err == nil {
			c.Close()
			t.Errorf("modernc opened %q: it does not read %s", dsn, key)
		}
		if key == "vfs" {
			continue
		}
		var pe *sqlbase.ParamError
		if err := (Dialect{}).Check(dsn); !errors.As(err, &pe) || pe.Param != key {
			t.Errorf("Check(%q) = %v; want a *ParamError naming %s", dsn, err, key)
		}
	}
	dsn := ":memory:?_bogus=bogus!"
	c, err := drv.Open(dsn)
	if err != nil {
		t.Fatalf("modernc refused %q: %v", dsn, err)
	}
	c.Close()
	if err := (Dialect{}).Check(dsn); err == nil {
		t.Errorf("Check(%q): no error for a parameter modernc ignores", dsn)
	}
}

func TestKnownPragmas(t *testing.T) {
	known := knownPragmas()
	if known == nil {
		t.Fatal("PRAGMA pragma_list returned nothing: Check cannot tell a mistyped _pragma")
	}
	for _, name := range []string{"busy_timeout", "foreign_keys", "journal_mode", "locking_mode", "query_only", "synchronous", "cache_size"} {
		if !known[name] {
			t.Errorf("pragma_list lacks %s", name)
		}
	}
	if known["busy_timout"] {
		t.Error("pragma_list has busy_timout")
	}
}

func TestCheck(t *testing.T) {
	for _, dsn := range []string{
		"",
		"x.db",
		":memory:",
		"x.db?",
		"x.db?_pragma=busy_timeout(5000)&_pragma=journal_mode=WAL&_txlock=IMMEDIATE&_time_format=sqlite&_inttotime=1",
		"x.db?_pragma=busy_timeout%3D5000&_pragma=main.synchronous(%27normal%27)&_pragma=foreign_keys(1)%3B",
		"x.db?_pragma=cache_size(-2000)&_pragma=optimize(0x10002)&_pragma=locking_mode(EXCLUSIVE)",
		"file:x.db?mode=ro&cache=shared&immutable=1&nolock=1&_fk=1&vfs=unix-none",
		"file:///abs/x.db?mode=rw#frag",
		"file://localhost/x.db",
		"x.db?vfs=memdb&vfs=memdb",
		"file:x.db?vfs=myvfs&_pragma=my_setting(1)", // a VFS may know PRAGMAs of its own
		"x.db?_timezone=UTC&_time_integer_format=unix_milli&_texttotime=true&_dqs=0&_error_rc=1&_defensive=1",
		"x.db?_busy_timeout=&_timeout=100&_journal=&_sync=extra&_vacuum=incremental&_query_only=off",
	} {
		if err := (Dialect{}).Check(dsn); err != nil {
			t.Errorf("Check(%q): %v", dsn, err)
		}
	}
	for _, tc := range []struct{ dsn, param, value string }{
		{"x.db?_pragma_x=1", "_pragma_x", ""},
		{"x.db?_busytimeout=5", "_busytimeout", ""},
		{"x.db?_fk=1&_locking_mode=EXCLUSIVE", "_locking_mode", ""}, // go-sqlite3's, not modernc's
		{"x.db?_lease_mode=off", "_lease_mode", ""},
		{"?_pragma=busy_timeout(5)", "_pragma", ""},
		{"x.db?mode=ro", "mode", "ro"},
		{"x.db?immutable=1", "immutable", "1"},
		{"x.db?_txlock=bogus", "_txlock", "bogus"},
		{"x.db?_busy_timeout=5s", "_busy_timeout", "5s"},
		{"x.db?_journal_mode=wall", "_journal_mode", "wall"},
		{"x.db?_fk=maybe", "_fk", "maybe"},
		{"x.db?_time_format=iso", "_time_format", "iso"},
		{"x.db?_timezone=Nowhere/Land", "_timezone", "Nowhere/Land"},
		{"x.db?_inttotime=maybe", "_inttotime", "maybe"},
		{"x.db?_defensive=", "_defensive", ""},
		{"x.db?_defensive=1&_defensive=1", "_defensive", ""},
		{"x.db?_defensive=1&_journal=OFF", "_journal", "OFF"},
		{"x.db?vfs=unix&vfs=unix-dotfile", "vfs", ""},
		{"x.db?_pragma=", "_pragma", ""},
		{"x.db?_pragma=busy_timout(5000)", "_pragma", "busy_timout"},
		{"x.db?_pragma=foreign_keys(1)%3BATTACH%20%27y.db%27%20AS%20y", "_pragma", "foreign_keys"},
		{"x.db?_pragma=foreign_keys(1", "_pragma", "foreign_keys"},
		{"x.db?_pragma=(1)", "_pragma", ""},
		{"x.db?_pragma=foreign_keys(1);x", "_pragma", ""},
		{"x.db?_fk=%zz", "_fk", ""},
		{"x.db?%zz=1", "%zz", ""},
		{"file://host/x.db?mode=ro", "file: URI authority", "host"},
		{"file:x.db?_fk=1#frag", "_fk", "1#frag"}, // modernc reads the fragment into the value
		{"file:x.db?mode=RO", "mode", "RO"},
		{"file:x.db?cache=none", "cache", "none"},
	} {
		err := (Dialect{}).Check(tc.dsn)
		var pe *sqlbase.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param || pe.Value != tc.value {
			t.Errorf("Check(%q) = %#v; want a *ParamError for %q, value %q", tc.dsn, err, tc.param, tc.value)
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
		{"x.db?_pragma=busy_timeout(5000)&mode=ro", sqlbase.Target{Path: "x.db"}, false}, // mode never reaches SQLite
		{"x.db?_query_only=1", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"x.db?_pragma=query_only(yes)", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"x.db?_pragma=query_only(1)&_query_only=0", sqlbase.Target{Path: "x.db"}, false},
		{":memory:", sqlbase.Target{Path: ":memory:", Memory: true}, false},
		{":memory:?_txlock=immediate", sqlbase.Target{Path: ":memory:", Memory: true}, false},
		{"file::memory:?cache=shared", sqlbase.Target{Path: ":memory:", Memory: true, Shared: true}, false},
		{"file:m?mode=memory&cache=shared", sqlbase.Target{Path: "m", Memory: true, Shared: true}, false},
		{"file:m?mode=memory", sqlbase.Target{Path: "m", Memory: true}, false},
		{"/m?vfs=memdb", sqlbase.Target{Path: "/m", Memory: true, Shared: true, VFS: "memdb"}, false},
		{"m?vfs=memdb", sqlbase.Target{Path: "m", Memory: true, VFS: "memdb"}, false},
		{"file:/m?vfs=memdb", sqlbase.Target{Path: "/m", Memory: true, Shared: true, VFS: "memdb"}, false},
		{"file:x.db?mode=ro", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"file:x.db?immutable=1", sqlbase.Target{Path: "x.db", ReadOnly: true}, false},
		{"file:x.db?nolock=1&nolock=0", sqlbase.Target{Path: "x.db", NoLock: true}, false},
		{"file:x.db?vfs=unix-none", sqlbase.Target{Path: "x.db", VFS: "unix-none"}, false},
		{"x.db?vfs=unix-dotfile", sqlbase.Target{Path: "x.db", VFS: "unix-dotfile"}, false},
		{"x.db?_pragma=locking_mode(EXCLUSIVE)", sqlbase.Target{Path: "x.db", Locking: "EXCLUSIVE", LockingParam: "_pragma"}, false},
		{"x.db?_pragma=locking_mode=exclusive", sqlbase.Target{Path: "x.db", Locking: "EXCLUSIVE", LockingParam: "_pragma"}, false},
		{"x.db?_pragma=main.locking_mode(%27exclusive%27)", sqlbase.Target{Path: "x.db", Locking: "EXCLUSIVE", LockingParam: "_pragma"}, false},
		{"x.db?_pragma=temp.locking_mode(EXCLUSIVE)", sqlbase.Target{Path: "x.db"}, false},
		{"x.db?_pragma=locking_mode(EXCLUSIVE)&_pragma=locking_mode(NORMAL)", sqlbase.Target{Path: "x.db", Locking: "NORMAL", LockingParam: "_pragma"}, false},
		{"file:x.db?_pragma=locking_mode(EXCLUSIVE)", sqlbase.Target{Path: "x.db", Locking: "EXCLUSIVE", LockingParam: "_pragma"}, false},
		{"file:///tmp/a%20b.db?mode=ro#frag", sqlbase.Target{Path: "/tmp/a b.db", ReadOnly: true}, false},
		{"file:", sqlbase.Target{}, false},
		{"file:?_fk=1", sqlbase.Target{}, false},
		{"?_pragma=x", sqlbase.Target{Path: "?_pragma=x"}, false}, // a file named so
		{"file://host/x.db", sqlbase.Target{}, true},
		{"x.db?a=%zz&_query_only=1", sqlbase.Target{Path: "x.db", ReadOnly: true}, true},
	} {
		got, err := (Dialect{}).Target(tc.dsn)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Target(%q) = %+v, %v; want %+v, error %v", tc.dsn, got, err, tc.want, tc.err)
		}
	}
}

func TestJournalMode(t *testing.T) {
	for dsn, want := range map[string]string{
		"x.db":                                                              "",
		"x.db?_pragma=journal_mode(wal)":                                    "WAL",
		"x.db?_pragma=journal_mode='wal'":                                   "WAL",
		"x.db?_pragma=journal_mode":                                         "",
		"x.db?_journal=truncate":                                            "TRUNCATE",
		"file:x.db?_pragma=journal_mode(MEMORY)":                            "MEMORY",
		"x.db?_pragma=journal_mode(WAL)&_journal_mode=DELETE":               "DELETE", // the key runs after _pragma
		"x.db?_pragma=journal_mode(WAL)&_journal_mode=":                     "WAL",    // an empty key runs nothing
		"x.db?_journal_mode=WAL&_journal=DELETE":                            "DELETE", // the alias wins
		"x.db?_pragma=journal_mode(DELETE)&_pragma=journal_mode(WAL)":       "WAL",
		"x.db?_pragma=journal_mode(WAL)&_pragma=journal_mode(DELETE)":       "WAL", // modernc sorts them
		"x.db?_pragma=journal_mode(TRUNCATE)&_pragma=journal_mode(PERSIST)": "TRUNCATE",
		"x.db?_pragma=temp.journal_mode(WAL)":                               "",
		"x.db?_pragma=journal_mode(bogus)":                                  "",
		"?_pragma=journal_mode(WAL)":                                        "",
	} {
		if got := (Dialect{}).JournalMode(dsn); got != want {
			t.Errorf("JournalMode(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// What Target and JournalMode say is what modernc opens.
func TestTargetMatchesModernc(t *testing.T) {
	drv := &sqlite.Driver{}
	dir := testdir.New(t)
	existing := newFile(t)
	n := 0
	fresh := func(query string) string {
		n++
		p := filepath.Join(dir, "f"+strings.Repeat("x", n)+".db")
		if query == "" {
			return p
		}
		return p + "?" + query
	}
	for _, dsn := range []string{
		fileURI(existing, "mode=ro"),
		fileURI(existing, "immutable=1"),
		fresh("mode=ro"),
		fresh("_query_only=1"),
		fresh("_pragma=query_only(1)&_query_only=0"),
		fresh("_pragma=query_only(on)"),
		fresh("_pragma=locking_mode(EXCLUSIVE)&_pragma=locking_mode(NORMAL)"),
		fresh("_pragma=locking_mode=exclusive"),
		fresh("_pragma=journal_mode(WAL)&_journal_mode=DELETE"),
		fresh("_pragma=journal_mode(WAL)&_pragma=journal_mode(DELETE)"),
		fresh("_pragma=journal_mode(TRUNCATE)&_pragma=journal_mode(PERSIST)"),
		fresh("_journal_mode=WAL&_journal=TRUNCATE"),
		":memory:",
		"file:tm?mode=memory&cache=shared",
	} {
		tg, err := (Dialect{}).Target(dsn)
		if err != nil {
			t.Fatalf("Target(%q): %v", dsn, err)
		}
		c := openConn(t, For(drv), dsn)
		ro, err := c.(readOnlyAsker).IsReadOnly("main")
		if err != nil {
			t.Fatal(err)
		}
		if got := ro || queryValue(t, c, "PRAGMA query_only") == int64(1); got != tg.ReadOnly {
			t.Errorf("%q: modernc opens it read-only %v; Target.ReadOnly %v", dsn, got, tg.ReadOnly)
		}
		locking := strings.ToUpper(queryValue(t, c, "PRAGMA locking_mode").(string))
		if tg.Locking != "" && tg.Locking != locking || tg.Locking == "" && locking != "NORMAL" {
			t.Errorf("%q: locking_mode %s; Target.Locking %q", dsn, locking, tg.Locking)
		}
		file := queryValue(t, c, "SELECT file FROM pragma_database_list WHERE name = 'main'")
		if memory := file == ""; memory != tg.Memory {
			t.Errorf("%q: modernc's main file %q; Target.Memory %v", dsn, file, tg.Memory)
		}
		if jm := (Dialect{}).JournalMode(dsn); jm != "" {
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
		all   = busy + "&" + sync + "&" + fk + "&" + wal
		noWAL = busy + "&" + sync + "&" + fk
	)
	for _, tc := range []struct {
		dsn    string
		onDisk bool
		want   string
	}{
		{"", true, ""},
		{"?_fk=1", true, "?_fk=1"},
		{"x.db", true, "x.db?" + all},
		{"x.db", false, "x.db?" + noWAL},
		{"x.db?", true, "x.db?" + all},
		{"x.db?_txlock=immediate&", true, "x.db?_txlock=immediate&" + all},
		{"file:x.db", true, "file:x.db?" + all},
		{"file:x.db?mode=ro", true, "file:x.db?mode=ro&" + noWAL},
		{"file:x.db?immutable=1", true, "file:x.db?immutable=1&" + noWAL},
		{"x.db?_query_only=1", true, "x.db?_query_only=1&" + noWAL},
		{":memory:", true, ":memory:?" + noWAL},
		{"file::memory:?cache=shared", true, "file::memory:?cache=shared&" + noWAL},
		{"/m?vfs=memdb", true, "/m?vfs=memdb&" + noWAL},
		{"file:", true, "file:?" + noWAL},
		{"x.db?_pragma=BUSY_TIMEOUT%3D5000&_fk=0&_journal=DELETE&_sync=FULL", true, "x.db?_pragma=BUSY_TIMEOUT%3D5000&_fk=0&_journal=DELETE&_sync=FULL"},
		{"x.db?_pragma=busy_timeout(1)&_pragma=synchronous=OFF&_pragma=foreign_keys(0)&_pragma=journal_mode(DELETE)", true,
			"x.db?_pragma=busy_timeout(1)&_pragma=synchronous=OFF&_pragma=foreign_keys(0)&_pragma=journal_mode(DELETE)"},
		{"x.db?_timeout=5&_synchronous=2", true, "x.db?_timeout=5&_synchronous=2&" + fk + "&" + wal},
		{"x.db?_busy_timeout=", true, "x.db?_busy_timeout=&" + sync + "&" + fk + "&" + wal}, // given, even empty
		{"x.db?_pragma=journal_mode", true, "x.db?_pragma=journal_mode&" + all},             // a question sets nothing
		{"file:x.db?_pragma=main.synchronous(OFF)", true, "file:x.db?_pragma=main.synchronous(OFF)&" + busy + "&" + fk + "&" + wal},
	} {
		if got := (Dialect{}).WithDefaults(tc.dsn, tc.onDisk); got != tc.want {
			t.Errorf("WithDefaults(%q, %v) =\n\t%q, want\n\t%q", tc.dsn, tc.onDisk, got, tc.want)
		}
	}
}

// Every DSN WithDefaults produces opens with modernc with the defaults in
// force, and the caller's own settings win.
func TestWithDefaultsOpen(t *testing.T) {
	drv := &sqlite.Driver{}
	dir := testdir.New(t)
	type settings struct {
		busy    int64
		journal string
		sync    int64
		fk      int64
	}
	read := func(c sqlbase.Conn) settings {
		return settings{
			busy:    queryValue(t, c, "PRAGMA busy_timeout").(int64),
			journal: queryValue(t, c, "PRAGMA journal_mode").(string),
			sync:    queryValue(t, c, "PRAGMA synchronous").(int64),
			fk:      queryValue(t, c, "PRAGMA foreign_keys").(int64),
		}
	}
	defaults := settings{30000, "wal", 1, 1}
	for i, tc := range []struct {
		query string
		uri   bool
		want  settings
	}{
		{"", false, defaults},
		{"", true, defaults},
		{"_txlock=immediate&_time_format=sqlite", false, defaults},
		{"cache=private&_txlock=immediate", true, defaults},
		{"_pragma=busy_timeout(5000)&_journal_mode=DELETE&_sync=FULL&_fk=0", false, settings{5000, "delete", 2, 0}},
		{"_pragma=busy_timeout%3D7&_pragma=journal_mode(TRUNCATE)&_pragma=synchronous(OFF)&_pragma=foreign_keys=off", true, settings{7, "truncate", 0, 0}},
	} {
		p := filepath.Join(dir, "d"+strings.Repeat("x", i)+".db")
		dsn := p
		if tc.uri {
			dsn = fileURI(p, tc.query)
		} else if tc.query != "" {
			dsn = p + "?" + tc.query
		}
		if err := (Dialect{}).Check(dsn); err != nil {
			t.Fatalf("Check(%q): %v", dsn, err)
		}
		full := (Dialect{}).WithDefaults(dsn, true)
		if err := (Dialect{}).Check(full); err != nil {
			t.Errorf("Check(WithDefaults(%q)): %v", dsn, err)
		}
		if jm := (Dialect{}).JournalMode(full); jm != strings.ToUpper(tc.want.journal) {
			t.Errorf("JournalMode(%q) = %q", full, jm)
		}
		c := openConn(t, For(drv), full)
		if got := read(c); got != tc.want {
			t.Errorf("%q opens with %+v, want %+v", full, got, tc.want)
		}
	}

	// A file opened read-only gets the defaults that write nothing, and
	// opens (journal_mode=WAL would fail it with SQLITE_READONLY).
	ro := fileURI(newFile(t), "mode=ro")
	c := openConn(t, For(drv), (Dialect{}).WithDefaults(ro, true))
	if got := read(c); got != (settings{30000, "delete", 1, 1}) {
		t.Errorf("%q opens with %+v", ro, got)
	}
	_, _, err := For(drv).Open(ro+"&"+"_pragma=journal_mode(WAL)", false)
	if code, ok := sqlbase.Code(err); !ok || code.Code != sqlbase.ReadOnly {
		t.Errorf("journal_mode(WAL) on a mode=ro file: %v; want SQLITE_READONLY", err)
	}
}

// Check's rejections fall in two classes: DSNs modernc refuses too (at
// open, after creating the file), and DSNs it opens while ignoring what
// they ask (typos, a plain name's SQLite parameters).
func TestCheckAgreesWithModernc(t *testing.T) {
	drv := &sqlite.Driver{}
	dir := testdir.New(t)
	n := 0
	path := func() string {
		n++
		return filepath.Join(dir, "c"+strings.Repeat("x", n)+".db")
	}
	for _, tc := range []struct {
		query   string
		uri     bool
		refused bool // by modernc too
	}{
		{"mode=RO", true, true},
		{"cache=none", true, true},
		{"_fk=1#frag", true, true},
		{"_defensive=1&_defensive=1", false, true},
		{"_defensive=1&_journal=OFF", false, true},
		{"vfs=unix&vfs=unix-dotfile", false, true},
		{"_pragma=foreign_keys(1", false, true},
		{"_pragma=", false, true},
		{"_pragma=busy_timout(5000)", false, false},
		{"mode=ro", false, false},
		{"_lease_mode=off", true, false},
		{"_busytimeout=5", false, false},
	} {
		p := path()
		dsn := p + "?" + tc.query
		if tc.uri {
			dsn = fileURI(p, "") + "?" + tc.query
		}
		if (Dialect{}).Check(dsn) == nil {
			t.Errorf("Check(%q): no error", dsn)
		}
		c, err := drv.Open(dsn)
		if err == nil {
			c.Close()
		}
		if refused := err != nil; refused != tc.refused {
			t.Errorf("modernc's Open(%q): %v; refused %v, want %v", dsn, err, refused, tc.refused)
		}
	}
}
