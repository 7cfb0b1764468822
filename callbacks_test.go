package cleolease_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// The callbacks a ConnectHook of Config.BaseDriver registers (update,
// commit, rollback and pre-update hooks, authorizer, trace) run only for
// statements on connections the pool hands out: the lease engine's private
// connection and the migrations' connection clear them once the hook has
// run. Each test runs the same calls through go-sqlite3 (cleolease's
// effective DSN, a hooked driver of its own) and through cleolease, and
// compares what the callbacks saw.

func init() {
	roles["callbacks-write"] = roleCallbacksWrite
}

// roleCallbacksWrite writes one row to hooks(v) through cleolease and
// reports "ok" or "err …".
func roleCallbacksWrite() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		say("err", err)
		return 1
	}
	defer db.Close()
	_, err = db.Exec(`INSERT INTO foo VALUES (77)`)
	say(outcome(err))
	return 0
}

// callbackLog records the callbacks of one driver's connections: the
// events in order, and the connections they ran on.
type callbackLog struct {
	mu     sync.Mutex
	events []string
	conns  map[*sqlite3.SQLiteConn]bool
	veto   atomic.Int32 // what the commit hook returns
	deny   atomic.Bool  // whether the authorizer denies everything
}

func (l *callbackLog) add(c *sqlite3.SQLiteConn, ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev != "" {
		l.events = append(l.events, ev)
	}
	if l.conns == nil {
		l.conns = map[*sqlite3.SQLiteConn]bool{}
	}
	l.conns[c] = true
}

// take returns the events since the last take, and every connection a
// callback ran on.
func (l *callbackLog) take() ([]string, map[*sqlite3.SQLiteConn]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.events
	l.events = nil
	return ev, maps.Clone(l.conns)
}

// driver returns a go-sqlite3 driver whose ConnectHook registers, on every
// connection, commit, rollback and update hooks and an authorizer that log
// to l (the authorizer logs only its connection: on cleolease's pool
// connections it also sees the driver's statements, a listed difference),
// then whatever more adds (given l and the connection).
func (l *callbackLog) driver(more func(*callbackLog, *sqlite3.SQLiteConn)) *sqlite3.SQLiteDriver {
	return &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.RegisterCommitHook(func() int {
			l.add(c, "commit")
			return int(l.veto.Load())
		})
		c.RegisterRollbackHook(func() { l.add(c, "rollback") })
		c.RegisterUpdateHook(func(op int, db, table string, rowid int64) {
			l.add(c, fmt.Sprintf("update(op=%d %s.%s rowid=%d)", op, db, table, rowid))
		})
		c.RegisterAuthorizer(func(int, string, string, string) int {
			l.add(c, "")
			if l.deny.Load() {
				return sqlite3.SQLITE_DENY
			}
			return sqlite3.SQLITE_OK
		})
		if more != nil {
			more(l, c)
		}
		return nil
	}}
}

// baseConnector opens go-sqlite3 connections from a driver of its own.
type baseConnector struct {
	drv *sqlite3.SQLiteDriver
	dsn string
}

func (c baseConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c baseConnector) Driver() driver.Driver                        { return c.drv }

// openHookTwins opens, on two fresh files, go-sqlite3 with raw's hooked
// driver and cleolease's effective DSN for query, and cleolease with cl's
// hooked driver as Config.BaseDriver; edit may change the Config. Both
// pools hold one connection; neither has connected yet.
func openHookTwins(t *testing.T, query string, raw, cl *callbackLog, more func(*callbackLog, *sqlite3.SQLiteConn), edit func(*cleolease.Config)) (rawDB, clDB *sql.DB, rawDSN, clPath string) {
	t.Helper()
	dir := testdir.New(t)
	var err error
	rawDSN, err = cleolease.EffectiveSQLiteDSN("file:" + filepath.Join(dir, "raw.db") + query)
	if err != nil {
		t.Fatal(err)
	}
	rawDB = sql.OpenDB(baseConnector{drv: raw.driver(more), dsn: rawDSN})
	clPath = filepath.Join(dir, "cl.db")
	cfg, err := cleolease.ParseDSN("file:" + clPath + query)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseDriver = cl.driver(more)
	if edit != nil {
		edit(cfg)
	}
	clDB, err = cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []*sql.DB{rawDB, clDB} {
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
	}
	return rawDB, clDB, rawDSN, clPath
}

// poolConn returns the native connection of db's single pooled connection.
func poolConn(t *testing.T, db *sql.DB) *sqlite3.SQLiteConn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var sc *sqlite3.SQLiteConn
	c.Raw(func(dc any) error {
		switch x := dc.(type) {
		case cleolease.Conn:
			sc = x.SQLiteConn()
		case *sqlite3.SQLiteConn:
			sc = x
		}
		return nil
	})
	if sc == nil {
		t.Fatal("no native connection")
	}
	return sc
}

// callbackOps is a sequence of calls of every write path, each described
// by its outcome.
func callbackOps(db *sql.DB) []string {
	ctx := context.Background()
	var out []string
	exec := func(q string, args ...any) {
		_, err := db.ExecContext(ctx, q, args...)
		out = append(out, q+": "+fmtErr(ctx, err))
	}
	exec(`CREATE TABLE t(x INTEGER PRIMARY KEY, y TEXT)`)
	exec(`INSERT INTO t(y) VALUES ('a')`)
	exec(`INSERT INTO t(y) VALUES ('b')`)
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		_, err = tx.ExecContext(ctx, `UPDATE t SET y = 'c' WHERE x = 1`)
		if err == nil {
			err = tx.Commit()
		}
	}
	out = append(out, "tx commit: "+fmtErr(ctx, err))
	if tx, err = db.BeginTx(ctx, nil); err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM t`)
		if rerr := tx.Rollback(); err == nil {
			err = rerr
		}
	}
	out = append(out, "tx rollback: "+fmtErr(ctx, err))
	rows, err := db.QueryContext(ctx, `INSERT INTO t(y) VALUES ('d') RETURNING x`)
	out = append(out, "query returning: "+fmtRows(ctx, rows, err))
	if st, err := db.PrepareContext(ctx, `DELETE FROM t WHERE x = ?`); err == nil {
		_, err = st.ExecContext(ctx, 2)
		st.Close()
		out = append(out, "prepared delete: "+fmtErr(ctx, err))
	}
	return out
}

// checkCallbacks fails t unless both logs hold the same events, and unless
// every callback ran on the pool's connection (or on one of also).
func checkCallbacks(t *testing.T, raw, cl *callbackLog, rawDB, clDB *sql.DB, also ...*sqlite3.SQLiteConn) {
	t.Helper()
	rawConn, clConn := poolConn(t, rawDB), poolConn(t, clDB)
	rawDB.Close()
	clDB.Close() // the engine hands the lane back on its own connection
	want, rawConns := raw.take()
	got, clConns := cl.take()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("callbacks differ\n go-sqlite3: %v\n cleolease:  %v", want, got)
	}
	if len(rawConns) != 1 || !rawConns[rawConn] {
		t.Fatalf("go-sqlite3's callbacks ran on %d connections", len(rawConns))
	}
	for c := range clConns {
		if c != clConn && !slices.Contains(also, c) {
			t.Errorf("a callback ran on a connection the pool never handed out (%d connections in all)", len(clConns))
		}
	}
}

// TestUserCallbacksOnlyOnUserConnections: with one pooled connection, the
// update, commit and rollback hooks see exactly what go-sqlite3's see
// ([commit update:t commit update:t commit …]), with the engine's claim,
// hand-back and heartbeat on its private connection invisible; with
// golang-migrate files, whose connection also carries the lease's fencing,
// they see nothing of the migrations (as with golang-migrate's own sqlite3
// driver, which opens "sqlite3"); a Migrator's statements are the user's
// own, on a connection without lease bookkeeping, and its callbacks see
// them as on go-sqlite3's pool.
func TestUserCallbacksOnlyOnUserConnections(t *testing.T) {
	const ddl = `CREATE TABLE m(v); INSERT INTO m VALUES (1)`
	var migratorConn *sqlite3.SQLiteConn // the Migrator's connection on cleolease
	migrator := cleolease.MigratorFunc(func(ctx context.Context, db *sql.DB) error {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		c.Raw(func(dc any) error {
			if sc, ok := dc.(*sqlite3.SQLiteConn); ok {
				migratorConn = sc
			}
			return nil
		})
		_, err = c.ExecContext(ctx, ddl)
		return err
	})
	for _, tc := range []struct {
		name string
		edit func(*cleolease.Config)
		raw  func(t *testing.T, db *sql.DB, dsn string) // the same migration on go-sqlite3
	}{
		{name: "plain"},
		{name: "migrations",
			edit: func(c *cleolease.Config) {
				c.MigrationsFS = fstest.MapFS{"1_m.up.sql": {Data: []byte(ddl)}, "1_m.down.sql": {Data: []byte(`DROP TABLE m`)}}
			},
			raw: func(t *testing.T, _ *sql.DB, dsn string) {
				// Before the pool's first connection, as an application
				// runs golang-migrate before it serves.
				plain, err := sql.Open("sqlite3", dsn)
				if err == nil {
					_, err = plain.Exec(ddl)
					plain.Close()
				}
				if err != nil {
					t.Fatal(err)
				}
			}},
		{name: "migrator",
			edit: func(c *cleolease.Config) { c.Migrator = migrator },
			raw: func(t *testing.T, db *sql.DB, _ string) {
				if err := migrator(context.Background(), db); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, cl := &callbackLog{}, &callbackLog{}
			rawDB, clDB, rawDSN, _ := openHookTwins(t, "", raw, cl, nil, tc.edit)
			migratorConn = nil
			if tc.raw != nil {
				tc.raw(t, rawDB, rawDSN)
			}
			if err := clDB.Ping(); err != nil {
				t.Fatal(err)
			}
			want, got := callbackOps(rawDB), callbackOps(clDB)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("results differ\n go-sqlite3: %q\n cleolease:  %q", want, got)
			}
			checkCallbacks(t, raw, cl, rawDB, clDB, migratorConn)
		})
	}
}

// TestVetoingCommitHookLeavesTheLeaseWorking is go-sqlite3's
// TestUpdateAndTransactionHooks: a commit hook that returns non-zero
// vetoes the user's write exactly as on go-sqlite3 (same error, same
// callbacks), and vetoes nothing of the engine's: with the veto still in
// force another process gets the lane this one holds, and once the hook
// lets commits through this process writes again.
func TestVetoingCommitHookLeavesTheLeaseWorking(t *testing.T) {
	raw, cl := &callbackLog{}, &callbackLog{}
	const q = "?_lease_mode=require&_lease_wait=20s"
	rawDB, clDB, _, path := openHookTwins(t, q, raw, cl, nil, nil)
	run := func(db *sql.DB, log *callbackLog) []string {
		var out []string
		for _, s := range []string{
			"create table foo (id integer primary key)",
			"insert into foo values (9)",
			"update foo set id = 99 where id = 9",
			"delete from foo where id = 99",
		} {
			_, err := db.Exec(s)
			out = append(out, s+": "+fmtErr(context.Background(), err))
		}
		log.veto.Store(1)
		_, err := db.Exec("insert into foo values (5)")
		return append(out, "vetoed: "+fmtErr(context.Background(), err))
	}
	want, got := run(rawDB, raw), run(clDB, cl)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("results differ\n go-sqlite3: %q\n cleolease:  %q", want, got)
	}

	// Another process takes the lane this one holds (a hand-off the
	// engine commits on its own connection), the veto still in force.
	child := startChild(t, "callbacks-write", "file:"+path+q)
	if got := child.expect(""); got != "ok" {
		t.Fatalf("another process's write while this one's commit hook vetoes: %s", got)
	}
	cl.veto.Store(0)
	raw.veto.Store(0)
	for _, db := range []*sql.DB{rawDB, clDB} {
		if _, err := db.Exec("insert into foo values (6)"); err != nil {
			t.Fatalf("write once the hook lets commits through: %v", err)
		}
	}
	var ids []string
	rows, err := clDB.Query(`SELECT group_concat(id) FROM (SELECT id FROM foo ORDER BY id)`)
	if err == nil {
		for rows.Next() {
			var s string
			rows.Scan(&s)
			ids = append(ids, s)
		}
		rows.Close()
	}
	if strings.Join(ids, "") != "6,77" {
		t.Fatalf("rows of foo = %v, %v; want 6,77", ids, err)
	}
	checkCallbacks(t, raw, cl, rawDB, clDB)
}

// TestDenyAllAuthorizerSameErrors: an authorizer that denies everything
// fails each of the user's statements with go-sqlite3's own error
// (SQLITE_AUTH, "not authorized"): cleolease prepares the statement before
// it takes the lease, and the engine's connection, where the authorizer is
// cleared, keeps working.
func TestDenyAllAuthorizerSameErrors(t *testing.T) {
	raw, cl := &callbackLog{}, &callbackLog{}
	raw.deny.Store(true)
	cl.deny.Store(true)
	rawDB, clDB, _, _ := openHookTwins(t, "", raw, cl, nil, nil)
	run := func(db *sql.DB) []string {
		ctx := context.Background()
		var out []string
		for _, s := range []string{
			"CREATE TABLE foo (id INTEGER PRIMARY KEY)",
			"INSERT INTO foo VALUES (1)",
			"SELECT 1",
			"PRAGMA user_version = 3",
		} {
			_, err := db.ExecContext(ctx, s)
			out = append(out, s+": "+fmtErr(ctx, err))
		}
		rows, err := db.QueryContext(ctx, "SELECT 1")
		out = append(out, "query: "+fmtRows(ctx, rows, err))
		return out
	}
	want, got := run(rawDB), run(clDB)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("results differ\n go-sqlite3: %q\n cleolease:  %q", want, got)
	}
	if !strings.Contains(want[0], "not authorized") {
		t.Fatalf("go-sqlite3 under a deny-all authorizer: %q", want)
	}
	checkCallbacks(t, raw, cl, rawDB, clDB)
}

// TestStealFenceVisibleToUpdateHook: under the opt-in
// _lease_steal_after_ttl the fencing check just before the driver's COMMIT
// refreshes the lease row's heartbeat inside the user's transaction, on
// the user's connection: the update hook sees that one row change (an
// UPDATE of main._writer_leases) just before each commit, and nothing else
// differs from go-sqlite3 (a listed difference; the check right after
// BEGIN IMMEDIATE is a plain read).
func TestStealFenceVisibleToUpdateHook(t *testing.T) {
	raw, cl := &callbackLog{}, &callbackLog{}
	rawDB, clDB, _, _ := openHookTwins(t, "?_lease_steal_after_ttl=true", raw, cl, nil, nil)
	if want, got := callbackOps(rawDB), callbackOps(clDB); !reflect.DeepEqual(got, want) {
		t.Fatalf("results differ\n go-sqlite3: %q\n cleolease:  %q", want, got)
	}
	clConn := poolConn(t, clDB)
	rawDB.Close()
	clDB.Close()
	want, _ := raw.take()
	got, conns := cl.take()
	var rest []string
	refreshes, commits, rollbacks := 0, 0, 0
	for i, ev := range got {
		switch {
		case strings.Contains(ev, " main._writer_leases "):
			refreshes++
			if !strings.HasPrefix(ev, fmt.Sprintf("update(op=%d ", sqlite3.SQLITE_UPDATE)) {
				t.Errorf("event %d, %s, is not a heartbeat refresh: %v", i, ev, got)
			}
			continue
		case ev == "commit":
			commits++
			if i == 0 || !strings.Contains(got[i-1], " main._writer_leases ") {
				t.Errorf("commit %d is not preceded by a heartbeat refresh: %v", i, got)
			}
		case ev == "rollback":
			rollbacks++
		}
		rest = append(rest, ev)
	}
	if !reflect.DeepEqual(rest, want) {
		t.Fatalf("callbacks without the %d heartbeat refreshes differ\n go-sqlite3: %v\n cleolease:  %v", refreshes, want, got)
	}
	if refreshes != commits || rollbacks == 0 {
		t.Fatalf("%d heartbeat refreshes for %d commits (%d rollbacks): %v", refreshes, commits, rollbacks, got)
	}
	if len(conns) != 1 || !conns[clConn] {
		t.Fatalf("callbacks ran on %d connections, want only the pool's", len(conns))
	}
}

// TestDifferenceFailedWriteEndsInCommit: a write that fails (here a UNIQUE
// violation) inside the driver's BEGIN IMMEDIATE is undone by SQLite, and
// the driver then commits the empty transaction, as go-sqlite3's
// autocommit does under the FAIL conflict rule: the commit hook fires
// where go-sqlite3's autocommit rolls back and fires the rollback hook.
// The data and the error are the same (a listed difference).
func TestDifferenceFailedWriteEndsInCommit(t *testing.T) {
	raw, cl := &callbackLog{}, &callbackLog{}
	rawDB, clDB, _, _ := openHookTwins(t, "", raw, cl, nil, nil)
	for _, db := range []*sql.DB{rawDB, clDB} {
		if _, err := db.Exec(`CREATE TABLE u(x UNIQUE); INSERT INTO u VALUES (1)`); err != nil {
			t.Fatal(err)
		}
	}
	raw.take()
	cl.take()
	_, rawErr := rawDB.Exec(`INSERT INTO u VALUES (2), (1)`)
	_, clErr := clDB.Exec(`INSERT INTO u VALUES (2), (1)`)
	ctx := context.Background()
	if fmtErr(ctx, rawErr) != fmtErr(ctx, clErr) || rawErr == nil {
		t.Fatalf("errors differ: go-sqlite3 %v, cleolease %v", rawErr, clErr)
	}
	if want, got := dumpTables(t, rawDB), dumpTables(t, clDB); want != got {
		t.Fatalf("data differs\n go-sqlite3: %s\n cleolease:  %s", want, got)
	}
	want, _ := raw.take()
	got, _ := cl.take()
	wantRaw := []string{fmt.Sprintf("update(op=%d main.u rowid=2)", sqlite3.SQLITE_INSERT), "rollback"}
	wantCl := []string{wantRaw[0], "commit"}
	if !reflect.DeepEqual(want, wantRaw) || !reflect.DeepEqual(got, wantCl) {
		t.Fatalf("callbacks of a failed write: go-sqlite3 %v (want %v), cleolease %v (want %v)", want, wantRaw, got, wantCl)
	}
}
