//go:build unix

package cleolease_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/proctest"
)

// A database the process may read but not write: a 0644 file owned by
// another user (as root, the child runs as nobody, uid 65534; as any other
// user, the file is 0444 and the directory 0555, which its owner cannot
// write either). SQLite opens such a file read-only. cleolease must then
// behave as go-sqlite3 does: reads work, each write fails with SQLite's own
// error, and nothing is created beside the file.

// roUID and roGID are the user the child runs as when the tests run as
// root: nobody.
const roUID, roGID = 65534, 65534

// roVariant is one read-only file: its journal mode and whether the child
// may create files in its directory. Each variant has twin directories,
// one per driver.
type roVariant struct {
	journal  string // DELETE or WAL
	writable bool   // the directory is writable by the child
}

func (v roVariant) name() string {
	d := "rodir"
	if v.writable {
		d = "rwdir"
	}
	return v.journal + "-" + d
}

var roVariants = []roVariant{{"DELETE", false}, {"DELETE", true}, {"WAL", false}, {"WAL", true}}

// roOps are the differential calls made on each read-only file: reads, a
// write via Exec, via a prepared statement, as a Query, inside BeginTx …
// Commit, inside a hand-written BEGIN IMMEDIATE on one connection, and DDL.
var roOps = []dop{
	seq("query", `SELECT a, b FROM t ORDER BY a`),
	seq("queryrow", `SELECT count(*), max(a) FROM t`),
	seq("query", `PRAGMA journal_mode`),
	seq("exec", `INSERT INTO t(a, b) VALUES (9, 'x')`),
	seq("prepare-exec", `UPDATE t SET b = ?`, "z"),
	seq("query", `INSERT INTO t(a, b) VALUES (10, 'y') RETURNING a`),
	seq("prepare-query", `DELETE FROM t RETURNING a`),
	seq("exec", `CREATE TABLE u(x)`),
	seq("begin", ""),
	seq("exec", `INSERT INTO t(a, b) VALUES (11, 'w')`),
	seq("queryrow", `SELECT count(*), max(a) FROM t`),
	seq("commit", ""),
	seq("begin", ""),
	seq("exec", `DELETE FROM t`),
	seq("rollback", ""),
	seq("conn", ""),
	seq("exec", `BEGIN IMMEDIATE`),
	seq("exec", `INSERT INTO t(a, b) VALUES (12, 'v')`),
	seq("exec", `COMMIT`),
	seq("close", ""),
	seq("queryrow", `SELECT count(*), group_concat(b) FROM t`),
}

func init() {
	roles["readonly-file"] = roleReadOnlyFile
}

// roleReadOnlyFile runs, for each variant under CLEOLEASE_RO_BASE, roOps
// and roTyped through raw go-sqlite3 (on the variant's "raw" twin, with
// the DSN cleolease gives a read-only connection) and through cleolease
// (on its "cl" twin), then the explicit-WAL and pending-migration cases,
// printing one "OUT" line per outcome and "DONE".
func roleReadOnlyFile() int {
	base := os.Getenv("CLEOLEASE_RO_BASE")
	// One line per outcome: "OUT variant side i<TAB>outcome", quoted.
	out := func(variant, side string, i any, outcome string) {
		fmt.Printf("OUT %s %s %v\t%q\n", variant, side, i, outcome)
	}
	fail := func(err error) int { fmt.Println("ERR", err); return 1 }
	for _, v := range roVariants {
		for _, side := range []string{"raw", "cl"} {
			path := filepath.Join(base, v.name()+"-"+side, "a.db")
			db, err := roOpen(side, "file:"+path)
			if err != nil {
				return fail(err)
			}
			db.SetMaxOpenConns(1)
			s := &session{db: db}
			for i, o := range roOps {
				out(v.name(), side, i, s.runOp(o))
			}
			s.end()
			for i, got := range roTyped(db) {
				out(v.name(), side, fmt.Sprint("typed ", i), got)
			}
			if err := db.Close(); err != nil {
				return fail(err)
			}
		}
	}
	// Opens the DSN itself makes read-only: no probe needed, same results.
	for _, q := range []string{"mode=ro", "immutable=1"} {
		for _, side := range []string{"raw", "cl"} {
			path := filepath.Join(base, "DELETE-rwdir-"+side, "a.db")
			db, err := roOpen(side, "file:"+path+"?"+q)
			if err != nil {
				return fail(err)
			}
			s := &session{db: db}
			for i, o := range roOps[:8] {
				out(q, side, i, s.runOp(o))
			}
			s.end()
			db.Close()
		}
	}
	// The lease helpers have no lease to report on a read-only file.
	{
		db, err := sql.Open("cleolease", "file:"+filepath.Join(base, "DELETE-rodir-cl", "a.db"))
		if err != nil {
			return fail(err)
		}
		_, err = cleolease.Stats(context.Background(), db)
		out("stats", "cl", 0, fmt.Sprintf("ErrNoLease=%v: %v", errors.Is(err, cleolease.ErrNoLease), err))
		db.Close()
	}
	// The caller's ConnectHook sees the same statements: the driver asks
	// whether the file is read-only before that hook registers anything.
	for _, side := range []string{"raw", "cl"} {
		var seen []string
		hooked := &sqlite3.SQLiteDriver{ConnectHook: func(sc *sqlite3.SQLiteConn) error {
			sc.RegisterAuthorizer(func(op int, a, b, _ string) int {
				seen = append(seen, fmt.Sprint(op, a, b))
				return sqlite3.SQLITE_OK
			})
			return nil
		}}
		dsn := "file:" + filepath.Join(base, "DELETE-rodir-"+side, "a.db")
		var db *sql.DB
		if side == "cl" {
			cfg, err := cleolease.ParseDSN(dsn)
			if err != nil {
				return fail(err)
			}
			cfg.BaseDriver = hooked
			db, err = cleolease.OpenDB(cfg)
			if err != nil {
				return fail(err)
			}
		} else {
			raw, err := cleolease.EffectiveReadOnlySQLiteDSN(dsn)
			if err != nil {
				return fail(err)
			}
			db = sql.OpenDB(rawConnector{hooked, raw})
		}
		s := &session{db: db}
		out("hook", side, 0, s.runOp(roOps[0]))
		out("hook", side, 1, s.runOp(roOps[3]))
		db.Close()
		out("hook", side, 2, strings.Join(seen, "; "))
	}
	// A journal mode the DSN asks for is applied as go-sqlite3 applies it:
	// on a read-only rollback-journal file, switching to WAL fails.
	for _, side := range []string{"raw", "cl"} {
		path := filepath.Join(base, "DELETE-rodir-"+side, "a.db")
		db, err := roOpen(side, "file:"+path+"?_journal_mode=WAL")
		if err != nil {
			return fail(err)
		}
		s := &session{db: db}
		out("explicit-wal", side, 0, s.runOp(seq("queryrow", `SELECT count(*), max(a) FROM t`)))
		for i, got := range roTyped(db) {
			out("explicit-wal", side, fmt.Sprint("typed ", i), got)
		}
		db.Close()
	}
	// Pending migrations on a read-only file: a warning, the open
	// succeeds, nothing is attempted.
	var logs bytes.Buffer
	db, err := cleolease.OpenDB(&cleolease.Config{
		SQLiteDSN:    "file:" + filepath.Join(base, "migrate", "a.db"),
		MigrationsFS: roMigrations,
		Logger:       slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return fail(err)
	}
	s := &session{db: db}
	out("migrate", "cl", 0, s.runOp(seq("queryrow", `SELECT count(*), max(a) FROM t`)))
	out("migrate", "cl", 1, s.runOp(seq("queryrow", `SELECT version, dirty FROM schema_migrations`)))
	db.Close()
	out("migrate", "log", 0, logs.String())
	// Decided per connection: once the parent has made the file
	// writable, the next connection takes the lease.
	db, err = sql.Open("cleolease", "file:"+filepath.Join(base, "perconn", "a.db"))
	if err != nil {
		return fail(err)
	}
	db.SetMaxIdleConns(0) // each call opens a new connection
	s = &session{db: db}
	out("perconn", "cl", 0, s.runOp(seq("exec", `INSERT INTO t(a, b) VALUES (30, 'p')`)))
	fmt.Println("WRITABLE?")
	if in := bufio.NewScanner(os.Stdin); !in.Scan() {
		return fail(errors.New("no answer from the parent"))
	}
	out("perconn", "cl", 1, s.runOp(seq("exec", `INSERT INTO t(a, b) VALUES (31, 'p')`)))
	st, err := cleolease.Stats(context.Background(), db)
	out("perconn", "cl", 2, fmt.Sprintf("grants=%d err=%v", st.Grants, err))
	out("perconn", "cl", 3, s.runOp(seq("query", `SELECT rowid, a, b FROM t ORDER BY rowid`)))
	db.Close()
	fmt.Println("DONE")
	return 0
}

// roOpen opens path through go-sqlite3 ("raw", with the DSN cleolease
// gives a connection SQLite opened read-only) or through cleolease.
func roOpen(side, dsn string) (*sql.DB, error) {
	if side == "cl" {
		return sql.Open("cleolease", dsn)
	}
	raw, err := cleolease.EffectiveReadOnlySQLiteDSN(dsn)
	if err != nil {
		return nil, err
	}
	return sql.Open("sqlite3", raw)
}

// roTyped makes writes the way existing code checks their errors, with a
// type assertion to sqlite3.Error, and describes each error's dynamic type
// and value.
func roTyped(db *sql.DB) []string {
	describe := func(err error) string {
		if err == nil {
			return "nil"
		}
		se, ok := err.(sqlite3.Error)
		return fmt.Sprintf("%T %v code=%d ext=%d: %v", err, ok, se.Code, se.ExtendedCode, err)
	}
	var got []string
	_, err := db.Exec(`INSERT INTO t(a, b) VALUES (20, 'q')`)
	got = append(got, "exec "+describe(err))
	tx, err := db.Begin()
	got = append(got, "begin "+describe(err))
	if err == nil {
		_, err = tx.Exec(`UPDATE t SET b = 'q'`)
		got = append(got, "tx exec "+describe(err))
		got = append(got, "commit "+describe(tx.Commit()))
	}
	rows, err := db.Query(`INSERT INTO t(a, b) VALUES (21, 'q') RETURNING a`)
	got = append(got, "query "+describe(err))
	if err == nil {
		for rows.Next() {
		}
		got = append(got, "rows.Err "+describe(rows.Err()))
		rows.Close()
	}
	return got
}

// rawConnector opens go-sqlite3 connections with a driver of its own.
type rawConnector struct {
	drv *sqlite3.SQLiteDriver
	dsn string
}

func (c rawConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c rawConnector) Driver() driver.Driver                        { return c.drv }

// roMigrations: version 1 is what the read-only file has, 2 is pending.
var roMigrations = fstest.MapFS{
	"1_t.up.sql":     {Data: []byte(`CREATE TABLE t(a INTEGER, b TEXT);`)},
	"1_t.down.sql":   {Data: []byte(`DROP TABLE t;`)},
	"2_idx.up.sql":   {Data: []byte(`CREATE INDEX t_a ON t(a);`)},
	"2_idx.down.sql": {Data: []byte(`DROP INDEX t_a;`)},
}

// TestReadOnlyFile runs roleReadOnlyFile as a user who cannot write the
// files and compares: every call's outcome through go-sqlite3 and through
// cleolease (rows, errors' type, code, extended code and text), the files
// beside each database afterwards (cleolease's twin directory must hold
// exactly what go-sqlite3's does), and the databases' bytes (unchanged).
// Also, through both drivers: mode=ro and immutable=1, a DSN that asks for
// WAL itself, and the statements an authorizer registered by the caller's
// ConnectHook sees. Through cleolease only: with pending migrations the
// open succeeds, reads work, a warning names the file and both versions,
// and the version table is untouched; Stats reports ErrNoLease; and once
// the file becomes writable, the next connection takes the lease
// (read-only is decided per connection).
func TestReadOnlyFile(t *testing.T) {
	base, err := os.MkdirTemp("", "cleolease-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil { // MkdirTemp makes it 0700
		t.Fatal(err)
	}
	asRoot := os.Geteuid() == 0
	fileMode, roDirMode := os.FileMode(0o644), os.FileMode(0o755)
	if !asRoot {
		fileMode, roDirMode = 0o444, 0o555
	}
	sums := map[string][32]byte{}
	mkdb := func(dir, journal string, writable bool, schema string) string {
		t.Helper()
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "a.db")
		db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode="+journal)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(schema); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		roFreeze(t, path, dir, fileMode, roDirMode, writable, asRoot)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sums[path] = sha256.Sum256(b)
		return path
	}
	const rows = `CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, NULL);`
	for _, v := range roVariants {
		for _, side := range []string{"raw", "cl"} {
			mkdb(filepath.Join(base, v.name()+"-"+side), v.journal, v.writable, rows)
		}
	}
	migPath := mkdb(filepath.Join(base, "migrate"), "DELETE", true, rows+
		`CREATE TABLE schema_migrations(version uint64, dirty bool); INSERT INTO schema_migrations VALUES (1, 0);`)
	perconn := mkdb(filepath.Join(base, "perconn"), "DELETE", true, rows)
	delete(sums, perconn) // written to once writable
	bin := filepath.Join(base, "bin")
	roCopyExecutable(t, bin)

	cmd := proctest.Command("CLEOLEASE_ROLE=readonly-file", "CLEOLEASE_RO_BASE="+base, proctest.GoraceNoExitSleep())
	cmd.Path, cmd.Args[0], cmd.Dir = bin, bin, base
	if asRoot {
		cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: roUID, Gid: roGID, Groups: []uint32{}}}
		probe := exec.Command(bin, "-test.run=^$")
		probe.SysProcAttr = cred
		if out, err := probe.CombinedOutput(); err != nil {
			t.Skipf("cannot run a process as uid %d (nobody) here, so no file is unwritable to the test: %v %s", roUID, err, out)
		}
		cmd.SysProcAttr = cred
	}
	c := proctest.StartCmd(t, cmd)
	got := map[string]string{} // "variant side i" → outcome
	var order []string
	for {
		line := c.Expect("")
		if line == "DONE" {
			break
		}
		if line == "WRITABLE?" {
			if err := os.Chmod(perconn, 0o666); err != nil {
				t.Fatal(err)
			}
			c.Send("yes")
			continue
		}
		rest, ok := strings.CutPrefix(line, "OUT ")
		if !ok {
			t.Fatalf("child: %s", line)
		}
		key, quoted, _ := strings.Cut(rest, "\t")
		val, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("child: %s: %v", line, err)
		}
		got[key] = val
		order = append(order, key)
	}
	c.Cmd.Wait()

	for _, key := range order {
		f := strings.Fields(key) // the raw side's keys drive the comparison
		if f[1] != "raw" {
			continue
		}
		f[1] = "cl"
		clKey := strings.Join(f, " ")
		if got[key] != got[clKey] {
			t.Errorf("%s differs:\n go-sqlite3: %s\n cleolease:  %s", strings.Join(append(f[:1:1], f[2:]...), " "), got[key], got[clKey])
		}
	}
	for _, v := range roVariants {
		// The twins were built alike; reading them must leave the same
		// files behind (whatever SQLite itself creates) and no others.
		raw, cl := roListing(t, filepath.Join(base, v.name()+"-raw")), roListing(t, filepath.Join(base, v.name()+"-cl"))
		if !slices.Equal(raw, cl) {
			t.Errorf("%s: files after go-sqlite3: %q, after cleolease: %q", v.name(), raw, cl)
		}
	}
	if l := roListing(t, filepath.Join(base, "migrate")); !slices.Equal(l, []string{"a.db"}) {
		t.Errorf("migrate: files %q, want only a.db", l)
	}
	for path, sum := range sums {
		b, err := os.ReadFile(path)
		if err != nil || sha256.Sum256(b) != sum {
			t.Errorf("%s changed (%v)", path, err)
		}
	}

	// Every write above must have failed as a write to a read-only
	// database, through both drivers: the comparison is not vacuous.
	if w := got["DELETE-rodir raw typed 0"]; !strings.Contains(w, "sqlite3.Error true code=8") || !strings.Contains(w, "attempt to write a readonly database") {
		t.Errorf("go-sqlite3's write: %s, want SQLITE_READONLY", w)
	}
	if r := got["DELETE-rwdir cl 0"]; !strings.Contains(r, `'one'`) && !strings.Contains(r, `one`) {
		t.Errorf("cleolease's read: %s", r)
	}
	if e, c := got["explicit-wal raw 0"], got["explicit-wal cl 0"]; e != c || !strings.Contains(e, "sqlite(8/") {
		t.Errorf("_journal_mode=WAL on a read-only file:\n go-sqlite3: %s\n cleolease:  %s", e, c)
	}
	if r := got["migrate cl 0"]; !strings.Contains(r, "int64:3") || !strings.Contains(r, ": ok") {
		t.Errorf("read with pending migrations: %s", r)
	}
	if r := got["migrate cl 1"]; !strings.Contains(r, "int64:1") {
		t.Errorf("version table with pending migrations: %s", r)
	}
	if r := got["stats cl 0"]; !strings.HasPrefix(r, "ErrNoLease=true") {
		t.Errorf("Stats on a read-only file: %s", r)
	}
	if r := got["hook raw 2"]; r == "" {
		t.Error("the authorizer saw nothing")
	}
	if r := got["perconn cl 0"]; !strings.Contains(r, "sqlite(8/") {
		t.Errorf("write while the file is read-only: %s", r)
	}
	if r := got["perconn cl 1"]; r != "exec: id=4 (ok) n=1 (ok)" {
		t.Errorf("write once the file is writable: %s", r)
	}
	if r := got["perconn cl 3"]; !strings.Contains(r, "[int64:4, int64:31, string:p] err=ok") || strings.Contains(r, "int64:30") {
		t.Errorf("rows: %s", r)
	}
	if r := got["perconn cl 2"]; r != "grants=1 err=<nil>" {
		t.Errorf("lease of that write: %s", r)
	}
	log := got["migrate log 0"]
	for _, want := range []string{"pending migrations", migPath, "database_version=1", "source_version=2"} {
		if !strings.Contains(log, want) {
			t.Errorf("warning %s does not mention %q", log, want)
		}
	}
}

// roFreeze makes path unwritable to the child: as root, the file stays
// root's with mode fileMode and the directory is handed to nobody when the
// child may create files there; otherwise the modes themselves refuse
// writes.
func roFreeze(t *testing.T, path, dir string, fileMode, roDirMode os.FileMode, writable, asRoot bool) {
	t.Helper()
	if err := os.Chmod(path, fileMode); err != nil {
		t.Fatal(err)
	}
	var err error
	switch {
	case writable && asRoot:
		err = os.Chown(dir, roUID, roGID)
	case !writable:
		err = os.Chmod(dir, roDirMode)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

// roCopyExecutable copies the test binary to dst, where another user can
// run it (go test builds it in a directory only its user may enter).
func roCopyExecutable(t *testing.T, dst string) {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, bufio.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// roListing returns the names in dir, sorted.
func roListing(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
