package api

import (
	"errors"
	"fmt"
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
