package main

// Migration sources for migrate and demo (--source, --migrations). Running
// migrations is package migrate's job (golang-migrate under the cold-open
// lease); the demo's own set is in demo_migrations.go.

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cleocode/cleolease/migrate"
)

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

// sourceFile is the name of the file of migration v in direction dir
// ("up" or "down") in fsys, "" when there is none.
func sourceFile(fsys fs.FS, v uint64, dir string) string {
	ents, _ := fs.ReadDir(fsys, ".")
	for _, e := range ents {
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil && m[3] == dir {
			if n, err := strconv.ParseUint(m[1], 10, 64); err == nil && n == v {
				return e.Name()
			}
		}
	}
	return ""
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
	if errors.Is(err, fs.ErrNotExist) {
		// The same words on every OS (Windows says "The system cannot
		// find the file specified").
		return nil, "", fmt.Errorf("migrations %q: no such file or directory", u)
	}
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
