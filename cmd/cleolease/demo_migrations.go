package main

// The demo's migrations: the embedded task-tracker set and the counting
// instrumentation the demo adds to a migration set. The demo's cleolease
// workers run them through the driver's cold open (Config.MigrationsFS).

import (
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"testing/fstest"
)

// demoMigrations is the embedded task-tracker schema.
//
//go:embed migrations/*.sql
var demoFiles embed.FS

func demoMigrations() fs.FS {
	sub, err := fs.Sub(demoFiles, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// ddlMigrationRuns is the demo's instrumentation table: every up migration
// the demo runs inserts one row here in the same transaction, so the data
// itself says which process applied which migration how often.
const ddlMigrationRuns = `CREATE TABLE IF NOT EXISTS migration_runs (
	version INTEGER NOT NULL,
	pid INTEGER NOT NULL,
	applied_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER))
)`

// countingFS copies the migrations of fsys into memory and appends to each
// up migration one INSERT INTO migration_runs(version, pid) with this
// process's pid. The row is part of the migration (same file, same
// transaction unless the set runs without golang-migrate's transaction).
func countingFS(fsys fs.FS, pid int) (fs.FS, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	out := fstest.MapFS{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil && m[3] == "up" {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			b = append(b, fmt.Sprintf("\n;\nINSERT INTO migration_runs (version, pid) VALUES (%d, %d);\n", v, pid)...)
		}
		out[e.Name()] = &fstest.MapFile{Data: b, Mode: 0o444}
	}
	return out, nil
}

// migrationFile names a migration for messages: "009_rebuild_tasks".
func migrationFile(fsys fs.FS, v uint64) string {
	ents, _ := fs.ReadDir(fsys, ".")
	for _, e := range ents {
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil && m[3] == "up" {
			if n, _ := strconv.ParseUint(m[1], 10, 64); n == v {
				return m[1] + "_" + m[2]
			}
		}
	}
	return strconv.FormatUint(v, 10)
}
