package core

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"github.com/cleocode/cleolease/internal/platform"
)

// detectFileSystem reports the filesystem holding a directory. Tests
// replace it to fake a network filesystem.
var detectFileSystem = platform.FileSystem

// checkFileSystem applies the network-filesystem policy once per
// connector, before the first connection opens (and so creates) anything.
// Connectors that take no lease (mode off, read-only) and in-memory
// databases are not checked. When the filesystem cannot be told (the
// directory is missing, the OS is not supported) the connect goes on, so
// that a missing directory fails with SQLite's own error, and the check is
// tried again on the next connect.
func (c *Connector) checkFileSystem(ctx context.Context) error {
	if !c.leased() || c.memory {
		return nil
	}
	c.mu.Lock()
	done, err := c.fsChecked, c.fsErr
	c.mu.Unlock()
	if done {
		return err
	}
	dir := fsDir(c.path)
	info, derr := detectFileSystem(dir)
	if derr != nil {
		c.log.LogAttrs(ctx, slog.LevelDebug, "cleolease: cannot tell the database's filesystem", slog.String("dir", dir), slog.String("err", derr.Error()))
		return nil
	}
	if info.Network || info.FUSE || info.LiteFS {
		dir = databaseDir(c.path) // named in the error or warning: its links resolved
	}
	err = decideFileSystem(ctx, dir, info, c.cfg.NetworkFS, c.log)
	c.mu.Lock()
	c.fsChecked, c.fsErr = true, err
	c.remoteHolders = err == nil && info.Network
	c.liteFS = err == nil && info.LiteFS
	c.mu.Unlock()
	if err == nil && info.LiteFS {
		c.warnLiteFSJournal(ctx)
	}
	return err
}

// decideFileSystem is the policy: a network filesystem is refused unless
// policy is NetworkFSAllow (then logged at warning level); a LiteFS mount
// passes (its liveness files go to a local directory: sidecardir.go);
// another FUSE filesystem is logged at warning level; anything else
// passes silently. Wherever the liveness files land, the lease engine
// proves at open that their locks conflict (ErrSidecarDir otherwise).
// logger may be nil.
func decideFileSystem(ctx context.Context, dir string, info platform.FSInfo, policy NetworkFS, logger *slog.Logger) error {
	warn := func(msg string) {
		if logger == nil {
			return
		}
		attrs := []slog.Attr{slog.String("dir", dir), slog.String("fs", info.Name)}
		if info.Note != "" {
			attrs = append(attrs, slog.String("note", info.Note))
		}
		logger.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
	}
	switch {
	case info.Network && policy != NetworkFSAllow:
		return &NetworkFSError{Path: dir, FSName: info.Name, Note: info.Note}
	case info.Network:
		warn("cleolease: database on a network filesystem, allowed by _lease_network_fs=allow: a lease row written on another host or during another boot is never reclaimed on local evidence")
	case info.LiteFS:
		// Supported without a warning: the connector keeps the liveness
		// files in a local directory (sidecardir.go).
	case info.FUSE:
		warn("cleolease: database on a FUSE filesystem: SQLite's locks and cleolease's lease hold only if its daemon implements POSIX locks for every process that opens the file")
	}
	return nil
}

// fsDir returns a directory whose filesystem holds the database SQLite
// opens at path, for statfs(2) and stat(2), which follow links: the
// directory of the file (of the link's target when the file is a
// symbolic link: SQLite follows it, and its -wal and -journal live next to
// the target), or of path itself when the file does not exist yet. The
// result is absolute. Unlike databaseDir it leaves the links among the
// path's directories unresolved (resolving them costs an lstat(2) per
// component), except on Windows, whose FileSystem reads the path itself:
// there it is databaseDir. It only reads links (lstat, readlink); it never
// opens the database.
func fsDir(path string) string {
	if runtime.GOOS == "windows" {
		// platform.FileSystem reads the path there (a UNC prefix, its
		// volume), so a directory link to a share must be resolved.
		return databaseDir(path)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if p, err := filepath.EvalSymlinks(path); err == nil {
			path = p
		}
	}
	dir := filepath.Dir(path)
	if a, err := filepath.Abs(dir); err == nil {
		dir = a
	}
	return dir
}

// databaseDir returns the directory whose filesystem holds the database
// SQLite opens at path: the directory of the file, symbolic links resolved
// (SQLite follows a link to the database, and its -wal and -journal live
// next to the target), or of path itself when the file does not exist yet.
// The result is absolute. It only reads links (lstat, readlink); it never
// opens the database.
func databaseDir(path string) string {
	if runtime.GOOS == "windows" && len(path) >= 3 && path[0] == '/' && path[2] == ':' {
		path = path[1:] // file:///C:/dir/db gives "/C:/dir/db"
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	dir := filepath.Dir(path)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if a, err := filepath.Abs(dir); err == nil {
		dir = a
	}
	return dir
}
