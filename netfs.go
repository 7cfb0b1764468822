package cleolease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"

	"github.com/cleocode/cleolease/internal/platform"
)

// NetworkFS is what the connector does with a database on a network
// filesystem (DSN _lease_network_fs).
type NetworkFS string

const (
	// NetworkFSRefuse (default): the first connect fails with a
	// *NetworkFSError naming the filesystem.
	NetworkFSRefuse NetworkFS = "refuse"
	// NetworkFSAllow opens the database anyway and logs a warning. What it
	// gives up: SQLite's locks are only as good as the filesystem's
	// (sqlite.org/howtocorrupt.html §2.1), and cleolease's liveness
	// evidence (locks on the sidecar, pids, process start times) describes
	// processes of this host only, so a lease row written by a process of
	// another host, or of this host during another boot, may belong to a
	// live holder elsewhere and is reclaimed only by Break or the
	// _lease_steal_after_ttl opt-in, never on local evidence alone.
	NetworkFSAllow NetworkFS = "allow"
)

// ErrNetworkFS matches (errors.Is) every *NetworkFSError.
var ErrNetworkFS = errors.New("cleolease: database on a network filesystem")

// NetworkFSError is returned by the first connect of a connector whose
// database lies on a network filesystem (NFS, SMB/CIFS, 9p — which is how
// WSL2 mounts Windows drives such as /mnt/c —, AFS, Ceph, Lustre,
// GlusterFS, …; on macOS nfs, smbfs, afpfs, webdav; on Windows a remote
// drive or a UNC path), unless the DSN says _lease_network_fs=allow.
// Writes through such a connector would take a lease that processes of
// other hosts cannot see. Connectors with _lease_mode=off, read-only opens
// (mode=ro, immutable=1) and in-memory databases are never refused. Nothing
// is created on the filesystem before the refusal.
type NetworkFSError struct {
	// Path is the directory whose filesystem was checked: the database's
	// directory, symbolic links resolved.
	Path string
	// FSName names the filesystem as the OS reports it ("nfs", "cifs",
	// "9p", "fuse.sshfs", "smbfs", `UNC share \\server`, …).
	FSName string
	// Note, when not empty, is a hint about this filesystem (for 9p, that
	// WSL2 mounts Windows drives over it).
	Note string
}

// Error names the directory, the filesystem and the opt-in.
func (e *NetworkFSError) Error() string {
	msg := fmt.Sprintf("cleolease: %s is on a network filesystem (%s): SQLite's locks and cleolease's lease do not hold across hosts; use a local filesystem, or set _lease_network_fs=allow to accept that (see the README)", e.Path, e.FSName)
	if e.Note != "" {
		msg += "; " + e.Note
	}
	return msg
}

// Is reports whether target is ErrNetworkFS.
func (e *NetworkFSError) Is(target error) bool { return target == ErrNetworkFS }

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
	dir := databaseDir(c.path)
	info, derr := detectFileSystem(dir)
	if derr != nil {
		c.log.LogAttrs(ctx, slog.LevelDebug, "cleolease: cannot tell the database's filesystem", slog.String("dir", dir), slog.String("err", derr.Error()))
		return nil
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
