//go:build (linux || darwin || freebsd || netbsd || openbsd || dragonfly) && !cleolease_pollwake

package platform

import (
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

const pollWake = false

// unixBell is a Bell on a Unix datagram socket; the address of a peer is
// derived from its holder id (addr).
type unixBell struct {
	conn   *net.UnixConn
	addr   func(id string) string
	max    int
	creds  bool   // the kernel attaches senders' credentials (SO_PASSCRED)
	path   string // the socket file to remove on Close ("" for abstract)
	oobLen int
}

// listenUnixgram binds a datagram socket at name.
func listenUnixgram(name string, max int, creds bool) (*unixBell, error) {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram", Name: name})
	if err != nil {
		return nil, err
	}
	c.SetReadBuffer(64 << 10) // macOS's default receive space holds two
	b := &unixBell{conn: c, max: max, creds: creds}
	if name != "" && name[0] != '@' {
		b.path = name
	}
	if creds {
		b.oobLen = setPassCred(c)
	}
	return b, nil
}

func (b *unixBell) MaxDatagram() int { return b.max }

func (b *unixBell) Recv(buf []byte) (int, error) {
	oob := make([]byte, b.oobLen)
	uid := uint32(os.Getuid())
	for {
		n, oobn, flags, _, err := b.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return 0, err
		}
		if n == 0 || n > b.max || flags&unix.MSG_TRUNC != 0 {
			continue
		}
		if b.creds && !sentBy(oob[:oobn], uid) {
			continue
		}
		return n, nil
	}
}

// Send never blocks: a datagram to a name nobody binds fails at once, and
// one to a socket whose queue is full fails with ErrFull instead of
// waiting (a blocked send would hold up a release, or the receiving
// goroutine, which also sends).
func (b *unixBell) Send(to string, msg []byte) error {
	if len(msg) > b.max {
		return unix.EMSGSIZE
	}
	rc, err := b.conn.SyscallConn()
	if err != nil {
		return err
	}
	sa := &unix.SockaddrUnix{Name: b.addr(to)}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), msg, unix.MSG_DONTWAIT, sa)
		return true // never wait for the socket to become writable
	}); err != nil {
		return err
	}
	if errors.Is(serr, unix.EAGAIN) || errors.Is(serr, unix.ENOBUFS) {
		return ErrFull
	}
	return serr
}

func (b *unixBell) Close() error {
	if b.path != "" {
		os.Remove(b.path)
	}
	return b.conn.Close()
}
