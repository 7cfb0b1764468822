//go:build linux && !cleolease_portable && !cleolease_pollwake

package platform

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// RefusesUnbound reports whether a datagram to a holder's doorbell on a
// file is refused (ECONNREFUSED) when that holder has no doorbell bound
// on the file: true here, where the name is abstract (no file to be
// missing), so a refusal proves the holder's engine there does not listen.
const RefusesUnbound = true

// ListenBell binds this process's doorbell on the database file: an
// abstract Unix datagram socket (no file, gone with the process) named
// after the holder id and the file's device and inode. The kernel
// attaches each sender's credentials (SO_PASSCRED): only processes of this
// user are listened to.
func ListenBell(dbPath, holderID string, file FileID) (Bell, error) {
	addr := func(id string) string { return fmt.Sprintf("@cleolease/%s/%d:%d", id, file.Dev, file.Ino) }
	b, err := listenUnixgram(addr(holderID), 60<<10, true)
	if err != nil {
		return nil, err
	}
	b.addr = addr
	return b, nil
}

// setPassCred asks the kernel for senders' credentials and returns the
// control buffer size they need.
func setPassCred(c *net.UnixConn) int {
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
		})
	}
	return unix.CmsgSpace(unix.SizeofUcred)
}

// sentBy reports whether the control data oob of a received datagram
// carries the credentials of a process running as uid.
func sentBy(oob []byte, uid uint32) bool {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if c, err := unix.ParseUnixCredentials(&m); err == nil {
			return c.Uid == uid
		}
	}
	return false
}
