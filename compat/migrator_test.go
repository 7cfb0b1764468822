package compat_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"ariga.io/atlas/sql/migrate"
	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	"entgo.io/ent/schema/field"
	"github.com/pressly/goose/v3"

	"github.com/cleocode/cleolease"
)

// ent's Schema.Create, goose's classic Up and goose's Provider, each run by
// 8 processes opening a fresh file at once, through cleolease's Migrator
// (issue 16, item 11): each migration is applied exactly once and every
// process opens the migrated database without an error. Without it (each
// process migrating on its own) 7 of 15 ent runs and 4 of 5 goose runs
// failed or applied a migration twice: they read the schema or their
// version table outside their own transaction.

// entApplied counts, in this process, the ent migration plans with
// changes that were applied.
var entApplied atomic.Int64

// entTables is what ent's generated migrate package holds for a schema
// with one entity (ent/migrate/schema.go): a generated client's
// Schema.Create passes it to schema.Create.
var entTables = func() []*schema.Table {
	cols := []*schema.Column{
		{Name: "id", Type: field.TypeInt, Increment: true},
		{Name: "name", Type: field.TypeString, Unique: true},
		{Name: "hits", Type: field.TypeInt, Default: 0},
	}
	counters := &schema.Table{Name: "counters", Columns: cols, PrimaryKey: []*schema.Column{cols[0]}}
	ncols := []*schema.Column{
		{Name: "id", Type: field.TypeInt, Increment: true},
		{Name: "body", Type: field.TypeString},
		{Name: "counter_notes", Type: field.TypeInt, Nullable: true},
	}
	notes := &schema.Table{Name: "notes", Columns: ncols, PrimaryKey: []*schema.Column{ncols[0]},
		ForeignKeys: []*schema.ForeignKey{{Symbol: "notes_counters_notes", Columns: []*schema.Column{ncols[2]},
			RefColumns: []*schema.Column{cols[0]}, RefTable: counters, OnDelete: schema.SetNull}}}
	return []*schema.Table{counters, notes}
}()

// gooseFS holds two goose migrations, the second a seed row that a
// migration applied twice would duplicate.
var gooseFS = fstest.MapFS{
	"00001_create_counters.sql": {Data: []byte(`-- +goose Up
CREATE TABLE counters (id INTEGER PRIMARY KEY, name TEXT NOT NULL, hits INTEGER NOT NULL DEFAULT 0);
-- +goose Down
DROP TABLE counters;
`)},
	"00002_seed.sql": {Data: []byte(`-- +goose Up
INSERT INTO counters (name) VALUES ('seed');
-- +goose Down
DELETE FROM counters WHERE name = 'seed';
`)},
}

func init() {
	cleolease.RegisterMigrator("compat-ent", cleolease.MigratorFunc(func(ctx context.Context, db *sql.DB) error {
		m, err := schema.NewMigrate(entsql.OpenDB(dialect.SQLite, db), schema.WithApplyHook(func(next schema.Applier) schema.Applier {
			return schema.ApplyFunc(func(ctx context.Context, conn dialect.ExecQuerier, plan *migrate.Plan) error {
				if len(plan.Changes) > 0 {
					entApplied.Add(1)
				}
				return next.Apply(ctx, conn, plan)
			})
		}))
		if err != nil {
			return err
		}
		return m.Create(ctx, entTables...)
	}))
	cleolease.RegisterMigrator("compat-goose-classic", cleolease.MigratorFunc(func(ctx context.Context, db *sql.DB) error {
		goose.SetBaseFS(gooseFS)
		goose.SetLogger(goose.NopLogger())
		if err := goose.SetDialect("sqlite3"); err != nil {
			return err
		}
		return goose.UpContext(ctx, db, ".")
	}))
	cleolease.RegisterMigrator("compat-goose-provider", cleolease.MigratorFunc(func(ctx context.Context, db *sql.DB) error {
		p, err := goose.NewProvider(goose.DialectSQLite3, db, gooseFS)
		if err != nil {
			return err
		}
		_, err = p.Up(ctx)
		return err
	}))
	for _, name := range []string{"compat-ent", "compat-goose-classic", "compat-goose-provider"} {
		roles["migrator-"+name] = func(ctx context.Context, a childArgs) (report, error) {
			var r report
			db, err := sql.Open(a.Driver, a.DSN)
			if err != nil {
				return r, err
			}
			defer db.Close()
			if err := ready(); err != nil {
				return r, err
			}
			// The first connection runs the Migrator (or waits for it).
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM counters`).Scan(&n); err != nil {
				r.fail("first query", err)
				return r, nil
			}
			r.add("opened")
			for range entApplied.Load() {
				r.add("ent_applied")
			}
			return r, nil
		}
	}
}

func TestMigratorEnt(t *testing.T) {
	path, dsn := tempDSN(t)
	r := runProcs(t, "migrator-compat-ent", childArgs{DSN: dsn + "?_migrations=compat-ent", Procs: 8})
	r.requireClean(t)
	if n := r.total("opened"); n != 8 {
		t.Errorf("%d processes opened the migrated database, want 8", n)
	}
	if n := r.total("ent_applied"); n != 1 {
		t.Errorf("ent applied its migration plan %d times, want once", n)
	}
	raw := rawDB(t, path)
	var fks int
	if err := raw.QueryRow(`SELECT count(*) FROM pragma_foreign_key_list('notes')`).Scan(&fks); err != nil || fks != 1 {
		t.Errorf("notes' foreign keys: %d, %v; want 1", fks, err)
	}
}

func TestMigratorGooseClassic(t *testing.T) {
	testMigratorGoose(t, "compat-goose-classic")
}

func TestMigratorGooseProvider(t *testing.T) {
	testMigratorGoose(t, "compat-goose-provider")
}

func testMigratorGoose(t *testing.T, name string) {
	path, dsn := tempDSN(t)
	r := runProcs(t, "migrator-"+name, childArgs{DSN: dsn + "?_migrations=" + name, Procs: 8})
	r.requireClean(t)
	if n := r.total("opened"); n != 8 {
		t.Errorf("%d processes opened the migrated database, want 8", n)
	}
	raw := rawDB(t, path)
	rows, err := raw.Query(`SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int64
	for rows.Next() {
		var v, n int64
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("goose recorded version %d %d times, want once", v, n)
		}
		versions = append(versions, v)
	}
	if len(versions) != 2 {
		t.Errorf("goose versions %v, want [1 2]", versions)
	}
	var seeds int
	if err := raw.QueryRow(`SELECT count(*) FROM counters WHERE name = 'seed'`).Scan(&seeds); err != nil || seeds != 1 {
		t.Errorf("seed rows: %d, %v; want 1 (the seed migration applied once)", seeds, err)
	}
}

// rawDB opens path on go-sqlite3 itself, for looking at the file.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
