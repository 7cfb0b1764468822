//go:build (darwin || freebsd || netbsd || openbsd || dragonfly || (linux && cleolease_portable)) && !cleolease_pollwake

package platform

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// MaxPathDatagram caps the portable tier's datagrams at macOS's default
// net.local.dgram.maxdgram, so that what works on Linux works there.
const MaxPathDatagram = 2048

// maxSunPath is the room for a socket path in sockaddr_un on macOS and
// the BSDs (104 bytes, with its terminating NUL).
const maxSunPath = 103

// ListenBell binds this process's doorbell on the database file: a Unix
// datagram socket bound to a path, "s-<slot>" in the lock directory
// (LocksDir), or — when that path would not fit sockaddr_un's 104 bytes —
// in a directory of this user's own under /tmp named after the file's
// device and inode. Only this user can reach the latter; the former is
// guarded by the lock directory's permissions (those of the database).
func ListenBell(dbPath, holderID string, file FileID) (Bell, error) {
	dir := LocksDir(dbPath)
	if len(dir)+len("/s-")+12 > maxSunPath {
		base := fmt.Sprintf("/tmp/cleolease-%d", os.Getuid())
		dir = fmt.Sprintf("%s/%x-%x", base, file.Dev, file.Ino)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		// /tmp is shared: use the directory only if it is this user's own.
		fi, err := os.Lstat(base)
		if err != nil {
			return nil, err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || !fi.IsDir() || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
			return nil, ErrUnsupported
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
	b.addr = addr
	return b, nil
}

func setPassCred(c *net.UnixConn) int    { return 0 }
func sentBy(oob []byte, uid uint32) bool { return true }
