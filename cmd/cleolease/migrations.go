package main

// Migrations for the command: the embedded demo set, the counting
// instrumentation the demo adds to a migration set, and source helpers.
// Running migrations is package migrate's job (golang-migrate under the
// cold-open lease); the demo's cleolease workers get it from the driver's
// cold open (Config.MigrationsFS).

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/cleocode/cleolease/migrate"
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

var migrationName = regexp.MustCompile(`^([0-9]+)_(.*)\.(up|down)\.(.*)$`)

// migrationVersions lists the versions of the up migrations in fsys, sorted.
func migrationVersions(fsys fs.FS) ([]uint64, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var vs []uint64
	for _, e := range ents {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil || m[3] != "up" {
			continue
		}
		v, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad version", e.Name())
		}
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	if len(vs) == 0 {
		return nil, errors.New("no up migrations (NNN_name.up.sql) found")
	}
	return vs, nil
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

// sourceFS resolves a --source URL to a directory: file:///abs/dir,
// file://rel/dir (golang-migrate's spelling) or a directory path, which
// must contain a path separator or start with '.' (migrate.IsDirPath, the
// driver's rule for _migrations, where any other plain value is a name
// registered from Go).
func sourceFS(u string) (fs.FS, string, error) {
	dir := u
	if !strings.Contains(u, "://") && !migrate.IsDirPath(u) {
		return nil, "", fmt.Errorf("migrations %q: a plain name is a source registered from Go (cleolease.RegisterMigrations), which this command cannot see; for a directory write ./%s or file://%s", u, u, u)
	}
	if strings.Contains(u, "://") {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, "", fmt.Errorf("migrations URL %q: %v", u, err)
		}
		if pu.Scheme != "file" {
			return nil, "", fmt.Errorf("migrations URL %q: only file:// sources are supported here", u)
		}
		dir = pu.Host + pu.Path
		if pu.Opaque != "" {
			dir = pu.Opaque
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, "", fmt.Errorf("migrations %q: %v", u, unwrapPathErr(err))
	}
	if !st.IsDir() {
		return nil, "", fmt.Errorf("migrations %q: not a directory", u)
	}
	fsys := os.DirFS(dir)
	if _, err := migrationVersions(fsys); err != nil {
		return nil, "", fmt.Errorf("migrations %q: %v", u, err)
	}
	return fsys, dir, nil
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
