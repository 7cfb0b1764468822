package migrate_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	msqlite "github.com/golang-migrate/migrate/v4/database/sqlite3"
	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/migrate"
)

// fixture is the 20-migration set shared with the driver's tests.
func fixture(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(dir) // Windows: file://C:/dir (see mgDSN in the root package's tests)
}

func newDB(t *testing.T) (path, dsn string, raw *sql.DB) {
	t.Helper()
	path = filepath.Join(testdir.New(t), "m.db")
	dsn = "file:" + path + "?_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1"
	raw, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Ping(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return path, dsn, raw
}

func status(t *testing.T, o migrate.Options) migrate.Status {
	t.Helper()
	st, err := migrate.Version(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ranCount(t *testing.T, raw *sql.DB) int {
	t.Helper()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM ran`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUpDownStepsGotoForce(t *testing.T) {
	ctx := context.Background()
	_, dsn, raw := newDB(t)
	o := migrate.Options{DSN: dsn, Base: mattn.For(nil), SourceURL: fixture(t)}

	if st := status(t, o); st != (migrate.Status{Version: migrate.NilVersion, Latest: 20, Pending: 20}) {
		t.Fatalf("fresh: %+v", st)
	}
	var n int
	raw.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&n)
	if n != 0 {
		t.Fatal("Version created the version table")
	}

	steps := []struct {
		name string
		do   func() error
		want int
	}{
		{"up", func() error { return migrate.Up(ctx, o) }, 20},
		{"up again", func() error { return migrate.Up(ctx, o) }, 20},
		{"down 3", func() error { return migrate.Down(ctx, o, 3) }, 17},
		{"steps 2", func() error { return migrate.Steps(ctx, o, 2) }, 19},
		{"goto 5", func() error { return migrate.Goto(ctx, o, 5) }, 5},
		{"steps -100", func() error { return migrate.Steps(ctx, o, -100) }, migrate.NilVersion},
		{"goto 20", func() error { return migrate.Goto(ctx, o, 20) }, 20},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		st := status(t, o)
		if st.Version != s.want || st.Dirty || st.Latest != 20 {
			t.Fatalf("%s: %+v, want version %d", s.name, st, s.want)
		}
		if s.want > 0 && ranCount(t, raw) != s.want {
			t.Fatalf("%s: %d bodies in ran, want %d", s.name, ranCount(t, raw), s.want)
		}
	}

	if err := migrate.Force(ctx, o, 12); err != nil {
		t.Fatal(err)
	}
	if st := status(t, o); st.Version != 12 || st.Dirty || st.Pending != 8 {
		t.Fatalf("after force 12: %+v", st)
	}
	if ranCount(t, raw) != 20 {
		t.Fatal("Force ran migrations")
	}

	if err := migrate.Down(ctx, o, 0); err == nil {
		t.Fatal("Down 0 accepted")
	}
	if err := migrate.Goto(ctx, o, 99); err == nil || !strings.Contains(err.Error(), "no migration 99") {
		t.Fatalf("Goto 99: %v", err)
	}
	if err := migrate.Force(ctx, o, -2); err == nil {
		t.Fatal("Force -2 accepted")
	}
}

// A database newer than the source is accepted by Up (a newer program
// migrated it) and left alone.
func TestUpAheadOfSource(t *testing.T) {
	ctx := context.Background()
	_, dsn, _ := newDB(t)
	o := migrate.Options{DSN: dsn, Base: mattn.For(nil), SourceURL: fixture(t)}
	if err := migrate.Up(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := migrate.Force(ctx, o, 25); err != nil {
		t.Fatal(err)
	}
	if err := migrate.Up(ctx, o); err != nil {
		t.Fatalf("Up on a database ahead of the source: %v", err)
	}
	if st := status(t, o); st.Version != 25 || st.Pending != 0 {
		t.Fatalf("%+v", st)
	}
}

// Under the lease: the run takes ("cleolease", "migrate") and fences its
// commits; the lease is released afterwards.
func TestUpUnderLease(t *testing.T) {
	ctx := context.Background()
	path, dsn, raw := newDB(t)
	e, err := lease.Open(ctx, lease.Options{Base: mattn.For(nil), Path: path, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	o := migrate.Options{DSN: dsn, Base: mattn.For(nil), SourceURL: fixture(t), Engine: e}
	if err := migrate.Up(ctx, o); err != nil {
		t.Fatal(err)
	}
	if st := status(t, o); st.Version != 20 {
		t.Fatalf("%+v", st)
	}
	var epoch int64
	if err := raw.QueryRow(`SELECT max(epoch) FROM _writer_leases WHERE scope = ? AND lane = ?`, migrate.Scope, migrate.Lane).Scan(&epoch); err != nil || epoch < 1 {
		t.Fatalf("no cold-open lease was taken: epoch %d, %v", epoch, err)
	}
	// The lane is free again: another holder gets it at once.
	h, err := e.Acquire(ctx, migrate.Scope, migrate.Lane, lease.AcquireOptions{Wait: 0, Require: true})
	if err != nil {
		t.Fatalf("lane still held after Up: %v", err)
	}
	h.Release()
}

// A failing migration leaves the previous version, clean, and no trace of
// its body; the error names it and carries SQLite's error.
func TestFailureIsAtomic(t *testing.T) {
	ctx := context.Background()
	_, dsn, raw := newDB(t)
	fsys := fstest.MapFS{
		"1_a.up.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
		"2_b.up.sql": {Data: []byte("CREATE TABLE b (x INTEGER); INSERT INTO a VALUES (1); INSERT INTO nope VALUES (1);")},
	}
	o := migrate.Options{DSN: dsn, Base: mattn.For(nil), FS: fsys, Table: "versions"}
	err := migrate.Up(ctx, o)
	var me *migrate.Error
	if !errors.As(err, &me) || me.Version != 2 || me.Name != "b" || me.File != "2_b.up.sql" || me.Current != 1 || me.Dirty || me.Op != "up" {
		t.Fatalf("%v (%+v)", err, me)
	}
	if want := "cleolease/migrate: migration 2 (2_b.up.sql) failed: no such table: nope; database left at version 1, clean"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	var se sqlite3.Error
	if !errors.Is(err, migrate.ErrFailed) || errors.Is(err, migrate.ErrDirty) || !errors.As(err, &se) {
		t.Fatalf("%v: sentinels or cause missing", err)
	}
	if st := status(t, o); st.Version != 1 || st.Dirty || st.Pending != 1 {
		t.Fatalf("%+v", st)
	}
	var n int
	raw.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'b'`).Scan(&n)
	if n != 0 {
		t.Fatal("table b was committed")
	}
	raw.QueryRow(`SELECT count(*) FROM a`).Scan(&n)
	if n != 0 {
		t.Fatal("the failed body's INSERT was committed")
	}
}

// A failing down migration of a file:// source is named by its file
// (issue 21, item 4: the error names the migration's source file).
func TestErrorNamesTheFile(t *testing.T) {
	ctx := context.Background()
	_, dsn, _ := newDB(t)
	dir := testdir.New(t)
	for name, body := range map[string]string{
		"0001_a.up.sql":   "CREATE TABLE a (x INTEGER);",
		"0001_a.down.sql": "DROP TABLE a;",
		"0002_b.up.sql":   "CREATE TABLE b (x INTEGER);",
		"0002_b.down.sql": "DROP TABLE nope;",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := migrate.Options{DSN: dsn, Base: mattn.For(nil), SourceURL: "file://" + filepath.ToSlash(dir)}
	if err := migrate.Up(ctx, o); err != nil {
		t.Fatal(err)
	}
	err := migrate.Down(ctx, o, 1)
	var me *migrate.Error
	if !errors.As(err, &me) || me.Version != 2 || me.File != "0002_b.down.sql" || !me.Down ||
		!strings.Contains(err.Error(), "migration 2 (0002_b.down.sql) failed: no such table: nope") {
		t.Fatalf("%v (%+v)", err, me)
	}
}

// A wrapped migration that commits by itself may have committed part of
// its work: the version is marked dirty rather than left clean.
func TestBodyEndingTheTransactionIsDirty(t *testing.T) {
	_, dsn, _ := newDB(t)
	fsys := fstest.MapFS{
		"1_a.up.sql": {Data: []byte("CREATE TABLE a (x INTEGER); COMMIT; CREATE TABLE b (x INTEGER);")},
	}
	o := migrate.Options{DSN: dsn, Base: mattn.For(nil), FS: fsys}
	err := migrate.Up(context.Background(), o)
	var me *migrate.Error
	if !errors.As(err, &me) || !me.Dirty || me.Current != 1 || !strings.Contains(err.Error(), "NoTxWrap") {
		t.Fatalf("%v (%+v)", err, me)
	}
	err = migrate.Up(context.Background(), o)
	if !errors.Is(err, migrate.ErrDirty) || errors.Is(err, migrate.ErrFailed) {
		t.Fatalf("second run: %v", err)
	}
}

// Cancelling the context in the middle of a migration rolls it back.
func TestCancelMidMigration(t *testing.T) {
	_, dsn, raw := newDB(t)
	in, release := make(chan struct{}), make(chan struct{})
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		return c.RegisterFunc("pause", func() int64 {
			close(in)
			<-release
			return 0
		}, false)
	}}
	fsys := fstest.MapFS{
		"1_a.up.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
		"2_b.up.sql": {Data: []byte("INSERT INTO a VALUES (1); SELECT pause(); INSERT INTO a VALUES (2);")},
	}
	o := migrate.Options{DSN: dsn, Base: mattn.For(drv), FS: fsys}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- migrate.Up(ctx, o) }()
	<-in
	cancel()
	close(release)
	err := <-done
	var me *migrate.Error
	if !errors.As(err, &me) || me.Version != 2 || me.Current != 1 || me.Dirty || !errors.Is(err, context.Canceled) {
		t.Fatalf("%v (%+v)", err, me)
	}
	if st := status(t, o); st.Version != 1 || st.Dirty {
		t.Fatalf("%+v", st)
	}
	var n int
	raw.QueryRow(`SELECT count(*) FROM a`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d rows of the cancelled migration committed", n)
	}
}

// Version-table read errors are reported, never taken for "no version".
func TestVersionErrorsSurface(t *testing.T) {
	_, dsn, raw := newDB(t)
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (something_else TEXT)`); err != nil {
		t.Fatal(err)
	}
	err := migrate.Up(context.Background(), migrate.Options{DSN: dsn, Base: mattn.For(nil), SourceURL: fixture(t)})
	if err == nil || !strings.Contains(err.Error(), "reading the version table") {
		t.Fatalf("Up over an unreadable version table: %v", err)
	}
}

func TestOptionErrors(t *testing.T) {
	ctx := context.Background()
	_, dsn, _ := newDB(t)
	base := mattn.For(nil)
	for _, o := range []migrate.Options{
		{SourceURL: fixture(t), Base: base},
		{DSN: dsn, Base: base},
		{DSN: dsn, SourceURL: fixture(t), Table: "bad-name", Base: base},
		{DSN: dsn, SourceURL: "file:///does/not/exist", Base: base},
		{DSN: dsn, SourceURL: fixture(t)},
	} {
		if err := migrate.Up(ctx, o); err == nil {
			t.Errorf("Up(%+v) succeeded", o)
		}
	}
	// Every operation needs the base, and says so.
	noBase := migrate.Options{DSN: dsn, SourceURL: fixture(t)}
	_, verr := migrate.Version(ctx, noBase)
	rerr := migrate.Run(ctx, noBase, func(context.Context, *sql.DB) error { return nil })
	for _, err := range []error{migrate.Up(ctx, noBase), migrate.Force(ctx, noBase, 1), verr, rerr} {
		if err == nil || !strings.Contains(err.Error(), "Options.Base is nil") {
			t.Errorf("without Options.Base: %v", err)
		}
	}
	// A missing migrations directory is named, and is os.ErrNotExist.
	err := migrate.Up(ctx, migrate.Options{DSN: dsn, Base: mattn.For(nil), SourceURL: "file:///does/not/exist"})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "directory /does/not/exist") {
		t.Errorf("missing directory: %v", err)
	}
}

// schema lists a file's schema objects, as sqlite_master records them.
func schema(t *testing.T, raw *sql.DB) []string {
	t.Helper()
	rows, err := raw.Query(`SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, tbl, text string
		if err := rows.Scan(&typ, &name, &tbl, &text); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Join([]string{typ, name, tbl, text}, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The version table (and its index) is the one golang-migrate's sqlite3
// driver creates, statement for statement, for the default table and a
// named one.
func TestVersionTableAsGolangMigrate(t *testing.T) {
	ctx := context.Background()
	for _, table := range []string{"", "versions"} {
		_, dsn, raw := newDB(t)
		if err := migrate.Force(ctx, migrate.Options{DSN: dsn, Base: mattn.For(nil), SourceURL: fixture(t), Table: table}, migrate.NilVersion); err != nil {
			t.Fatal(err)
		}
		_, _, theirs := newDB(t)
		if _, err := msqlite.WithInstance(theirs, &msqlite.Config{MigrationsTable: table}); err != nil {
			t.Fatal(err)
		}
		got, want := schema(t, raw), schema(t, theirs)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("table %q: schema\n%s\nwant golang-migrate's\n%s", table, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// The connection that runs golang-migrate's files has the callbacks of the
// application's connection hook cleared (Base.OpenPrivate); Run's keeps
// them (Base.Open).
func TestCallbacksClearedExceptInRun(t *testing.T) {
	ctx := context.Background()
	_, dsn, _ := newDB(t)
	var updates atomic.Int64
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.RegisterUpdateHook(func(int, string, string, int64) { updates.Add(1) })
		return nil
	}}
	o := migrate.Options{DSN: dsn, Base: mattn.For(drv), SourceURL: fixture(t)}
	if err := migrate.Up(ctx, o); err != nil {
		t.Fatal(err)
	}
	if n := updates.Load(); n != 0 {
		t.Fatalf("the update hook saw %d rows of the migrations", n)
	}
	err := migrate.Run(ctx, o, func(ctx context.Context, db *sql.DB) error {
		if db.Driver() != drv {
			return fmt.Errorf("Run's db has driver %T %p, want the base's go-sqlite3 driver %p", db.Driver(), db.Driver(), drv)
		}
		_, err := db.ExecContext(ctx, `INSERT INTO ran (version) VALUES (1000)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := updates.Load(); n != 1 {
		t.Fatalf("the update hook saw %d rows of Run's function, want 1", n)
	}
}

// A base that does not give its database/sql driver (no SQLDriver method)
// still gets a *sql.DB whose Driver opens connections on it.
func TestRunDriverOfBaseWithoutSQLDriver(t *testing.T) {
	ctx := context.Background()
	_, dsn, _ := newDB(t)
	o := migrate.Options{DSN: dsn, Base: struct{ sqlbase.Driver }{mattn.For(nil)}}
	err := migrate.Run(ctx, o, func(ctx context.Context, db *sql.DB) error {
		conn, err := db.Driver().Open(dsn)
		if err != nil {
			return err
		}
		if _, ok := conn.(sqlbase.Conn); !ok {
			conn.Close()
			return fmt.Errorf("Driver().Open returned %T", conn)
		}
		if err := conn.Close(); err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, `CREATE TABLE made_by_run (x)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
