//go:build (darwin || freebsd || netbsd || openbsd || dragonfly || (linux && cleolease_portable)) && !cleolease_pollwake

package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
)

// RefusesUnbound reports whether a datagram to a holder's doorbell on a
// file is refused when that holder has no doorbell bound on the file:
// false here, where a doorbell is a socket file (a missing one proves
// nothing: the liveness files' directory may have been replaced).
const RefusesUnbound = false

// MaxPathDatagram caps the portable tier's datagrams at macOS's default
// net.local.dgram.maxdgram, so that what works on Linux works there.
const MaxPathDatagram = 2048

// maxSunPath is the room for a socket path in sockaddr_un on macOS and
// the BSDs (104 bytes, with its terminating NUL).
const maxSunPath = 103

// ListenBell binds this process's doorbell on the database file: a Unix
// datagram socket bound to a path, "s-<slot>" in the lock directory
// (LocksDir), or — when that path would not fit sockaddr_un's 104 bytes —
// in sharedBellDir, a directory named after the file's device and inode
// that the processes of every user who opens the file share. The socket
// file is made writable by everyone (connecting or sending to a socket
// file needs write permission on it), so that processes of different
// users sharing the database reach each other: the lock directory's
// permissions (those of the database) guard the former, and the latter is
// open to every local user. The doorbell is only a hint (a wake-up, a
// registration that a holder checks against the liveness locks and the
// database before acting on it), never trusted for exclusion: a forged or
// lost datagram can cost a waiter a look at the database, or leave it to
// its fallback poll, never a write without the lease.
func ListenBell(dbPath, holderID string, file FileID) (Bell, error) {
	dir := LocksDir(dbPath)
	if len(dir)+len("/s-")+12 > maxSunPath {
		var err error
		if dir, err = sharedBellDir(bellRoot, file); err != nil {
			return nil, err
		}
	}
	addr := func(id string) string { return filepath.Join(dir, "s-"+hex(SlotFor(id))) }
	name := addr(holderID)
	if len(name) > maxSunPath {
		return nil, ErrUnsupported
	}
	b, err := listenUnixgram(name, MaxPathDatagram, false)
	if err != nil {
		// A socket file left by a process of the same slot that died.
		os.Remove(name)
		if b, err = listenUnixgram(name, MaxPathDatagram, false); err != nil {
			return nil, err
		}
	}
	// Bound with the umask's mode: open it to the other users of the file.
	if err := os.Chmod(name, 0o666); err != nil {
		b.Close()
		return nil, err
	}
	b.addr = addr
	return b, nil
}

// bellRoot is where sharedBellDir makes its directories.
const bellRoot = "/tmp/cleolease-bells"

// sharedBellDir returns (creating it if needed) root/<dev>-<ino>, the
// doorbell directory of the database file whose identity is file, shared
// by every user who opens the file. Both directories are like /tmp:
// writable by everyone, with the sticky bit, so that a user can remove
// only the sockets it owns. A directory that is a symlink, or lacks the
// sticky bit or everyone's write permission (made by someone else, or
// not by this code), is refused with ErrUnsupported: the process's waiters
// then poll.
func sharedBellDir(root string, file FileID) (string, error) {
	dir := fmt.Sprintf("%s/%x-%x", root, file.Dev, file.Ino)
	for _, d := range []string{root, dir} {
		if err := os.Mkdir(d, 0o700); err == nil {
			// Mkdir applies the umask; the mode is set after, while only
			// this user can use the directory.
			if err := os.Chmod(d, os.ModeSticky|0o777); err != nil {
				return "", err
			}
		} else if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm()&0o777 != 0o777 {
			return "", ErrUnsupported
		}
	}
	return dir, nil
}

func setPassCred(c *net.UnixConn) int    { return 0 }
func sentBy(oob []byte, uid uint32) bool { return true }
