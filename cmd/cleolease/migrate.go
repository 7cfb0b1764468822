package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/spf13/cobra"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/migrate"
)

func newMigrateCmd() *cobra.Command {
	var (
		src        string
		table      string
		sidecarDir string
		noTxWrap   bool
	)
	cmd := &cobra.Command{
		Use:   "migrate DB {up | down N | goto V | version | force V}",
		Short: "Run golang-migrate migrations on DB under the cold-open lease",
		Long: `migrate runs golang-migrate on DB while holding the cold-open lease, so it
never races a process that is opening DB with cleolease (which migrates under
the same lease) or another 'cleolease migrate'.

  up        apply every pending migration
  down N    roll back N migrations
  goto V    migrate up or down to version V
  version   print the current version and dirty flag
  force V   record version V as clean without running anything (after you
            repaired a failed migration by hand); -1 records no version

up, down and goto need --source (a golang-migrate source URL such as
file://migrations). Given --source, every operation creates a DB that does
not exist (an empty database), as golang-migrate's own command does;
without it, DB must exist. Unless --no-tx-wrap, each migration and its
version are committed in one transaction, so a failed migration leaves the
previous version, clean. A failure names DB and the migration's file.`,
		Example: `  cleolease migrate app.db --source file://migrations up
  cleolease migrate app.db --source file://migrations down 1
  cleolease migrate app.db version`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				if len(args) == 0 {
					return usagef("missing the database path and the operation")
				}
				return usagef("missing the operation: up, down N, goto V, version or force V")
			}
			return nil
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			op, err := parseMigrateOp(args[1:], src)
			if err != nil {
				return err
			}
			if !migrate.ValidTableName(table) {
				return usagef("--table %q is not a plain SQL identifier", table)
			}
			return runMigrate(cmd.Context(), cmd.OutOrStdout(), args[0], op, src, table, sidecarDir, noTxWrap)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&src, "source", "", "the migrations: a golang-migrate file:// URL (file://DIR), or a directory path that contains a path separator or starts with '.' (./DIR), as the DSN parameter _migrations takes it")
	f.StringVar(&table, "table", cleolease.DefaultMigrationsTable, "golang-migrate version table")
	f.StringVar(&sidecarDir, "sidecar-dir", "", "the directory the processes keep their liveness files in (their DSN's _lease_sidecar_dir; on a LiteFS mount, by default, the one they derive there)")
	f.BoolVar(&noTxWrap, "no-tx-wrap", false, "run each migration file without golang-migrate's transaction")
	return cmd
}

type migrateOp struct {
	name string
	n    int64
}

func parseMigrateOp(args []string, src string) (migrateOp, error) {
	op := migrateOp{name: args[0]}
	want := 0
	switch op.name {
	case "up", "version":
	case "down", "goto", "force":
		want = 1
	default:
		return op, usagef("unknown operation %q: want up, down N, goto V, version or force V", op.name)
	}
	if len(args)-1 != want {
		if want == 0 {
			return op, usagef("%s takes no argument", op.name)
		}
		return op, usagef("%s needs one number", op.name)
	}
	if want == 1 {
		n, err := strconv.ParseInt(args[1], 10, 64)
		switch {
		case err != nil:
			return op, usagef("%s %q: not a number", op.name, args[1])
		case op.name == "down" && n < 1:
			return op, usagef("down %d: N must be at least 1", n)
		case op.name == "goto" && n < 0:
			return op, usagef("goto %d: V must not be negative", n)
		case op.name == "force" && n < -1:
			return op, usagef("force %d: V must be -1 or more", n)
		}
		op.n = n
	}
	if src == "" && (op.name == "up" || op.name == "down" || op.name == "goto") {
		return op, usagef("%s needs --source (for example --source file://migrations)", op.name)
	}
	return op, nil
}

// printHandler prints each "migration applied" record of package migrate
// as one line naming the migration's file in fsys ("applied
// 0002_email.up.sql (3ms)"), and any warning with its attributes.
type printHandler struct {
	w    io.Writer
	fsys fs.FS
}

func (h printHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h printHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h printHandler) WithGroup(string) slog.Handler                { return h }
func (h printHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level > slog.LevelInfo {
		var attrs []string
		r.Attrs(func(a slog.Attr) bool {
			attrs = append(attrs, a.Key+" "+a.Value.String())
			return true
		})
		msg := "warning: " + strings.TrimPrefix(r.Message, "cleolease: ")
		if len(attrs) > 0 {
			msg += " (" + strings.Join(attrs, ", ") + ")"
		}
		fmt.Fprintln(h.w, wrap("  ", "    ", msg))
		return nil
	}
	var v uint64
	var name, took string
	down := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "version":
			v = a.Value.Uint64()
		case "name":
			name = a.Value.String()
		case "down":
			down = a.Value.Bool()
		case "took":
			took = fmtAge(a.Value.Duration())
		}
		return true
	})
	dir := "up"
	if down {
		dir = "down"
	}
	what := sourceFile(h.fsys, v, dir)
	if what == "" {
		what = fmt.Sprintf("migration %d (%s) %s", v, name, dir)
	}
	fmt.Fprintln(h.w, wrap("  ", "    ", fmt.Sprintf("applied %s (%s)", what, took)))
	return nil
}

func runMigrate(ctx context.Context, w io.Writer, path string, op migrateOp, src, table, sidecarDir string, noTxWrap bool) error {
	o := migrate.Options{Base: mattn.For(nil), Table: table, NoTxWrap: noTxWrap}
	var err error
	if src != "" {
		if o.FS, _, err = sourceFS(src); err != nil {
			return failf("%v", err)
		}
	} else {
		o.FS = fstest.MapFS{} // force and version read no migration
	}
	o.Logger = slog.New(printHandler{w: w, fsys: o.FS})
	if err := checkDBFile(path); err != nil {
		// golang-migrate's command opens the database once the source
		// has opened, and its sqlite3 driver creates a missing file:
		// every operation given a source does the same here.
		if src == "" || !errors.Is(err, errNoSuchFile) {
			return err
		}
		if err := createDBFile(ctx, path); err != nil {
			return err
		}
		fmt.Fprintln(w, wrap("", "  ", path+": created (an empty database)"))
	}
	if o.DSN, err = fileURI(path, "_busy_timeout=30000"); err != nil {
		return failf("%s: %v", path, err)
	}
	before, err := migrate.Version(ctx, o)
	if err != nil {
		return migrateFailure(path, err)
	}
	if op.name == "version" {
		fmt.Fprintln(w, wrap("", "  ", path+": "+fmtVersion(before, src != "")))
		return nil
	}
	// The cold-open lease lives in the file's lease engine (this creates
	// the lease tables if the file has none yet, as a cleolease open would).
	lo, err := engineOptions(path, o.DSN, sidecarDir)
	if err != nil {
		return failf("%s: the liveness files' directory: %v (or give --sidecar-dir)", path, err)
	}
	e, err := lease.Open(ctx, lo)
	if err != nil {
		return leaseFailure(path, err)
	}
	defer e.Close()
	o.Engine = e
	start := time.Now()
	switch op.name {
	case "up":
		err = migrate.Up(ctx, o)
	case "down":
		err = migrate.Down(ctx, o, int(op.n))
	case "goto":
		err = migrate.Goto(ctx, o, uint(op.n))
	case "force":
		err = migrate.Force(ctx, o, int(op.n))
	}
	if err != nil {
		var me *migrate.Error
		if errors.As(err, &me) && me.Dirty && me.Err == nil {
			what := ""
			if me.File != "" {
				what = " (" + me.File + ")"
			}
			return failf("%s: dirty at version %d%s: a migration failed half-way; repair the schema by hand, then 'cleolease migrate %s force V'",
				path, me.Current, what, path)
		}
		return migrateFailure(path, err)
	}
	after, err := migrate.Version(ctx, o)
	if err != nil {
		return migrateFailure(path, err)
	}
	if after.Version == before.Version && after.Dirty == before.Dirty {
		fmt.Fprintln(w, wrap("", "  ", path+": no change: "+fmtVersion(after, src != "")))
		return nil
	}
	fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s: %s (was %s; %s under the cold-open lease)", path, fmtVersion(after, src != ""),
		fmtVersion(migrate.Status{Version: before.Version, Dirty: before.Dirty}, false), fmtAge(time.Since(start)))))
	return nil
}

func fmtVersion(st migrate.Status, withSource bool) string {
	s := "no version"
	if st.Version != migrate.NilVersion {
		s = fmt.Sprintf("version %d", st.Version)
	}
	if st.Dirty {
		s += ", DIRTY"
	} else {
		s += ", clean"
	}
	if withSource && st.Latest != migrate.NilVersion {
		s += fmt.Sprintf("; newest in the source %d, %d pending", st.Latest, st.Pending)
	}
	return s
}

// migrateFailure is a failed migration operation on path, as one line:
// "path: migration 3 (0003_add.up.sql) failed: near "FOO": syntax error;
// database left at version 2, clean". The command names itself, so
// package migrate's prefix is dropped.
func migrateFailure(path string, err error) error {
	if rf := replicaFailure(path, err); rf != nil {
		return rf
	}
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrNotADB || se.Code == sqlite3.ErrCorrupt) {
		return sqliteFailure(path, err) // the file, not a migration
	}
	return failf("%s: %s", path, strings.TrimPrefix(err.Error(), "cleolease/migrate: "))
}
