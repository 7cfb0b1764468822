//go:build linux

package lease

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// doorbell wakes this process's waiters and linger watcher when something
// happened that may let them proceed, without a fixed sleep, and wakes
// only the process concerned:
//
//   - Each engine receives on an abstract Unix datagram socket named after
//     its holder id and the file's device and inode. A waiter sends
//     "waiting" (its registration) to the holder it finds; a holder that
//     hands a lane over sends "granted" to the new holder, with the
//     registrations it did not serve. A plain "granted" (no payload) tells
//     a waiter to look again: the process it registered with does not
//     hold the lane. One datagram, one woken process; sends never block.
//   - inotify reports every close of the sidecar — how a crashed process's
//     exit shows up — and a rename, unlink or link-count change of the
//     database file (so the identity check needs a stat only then).
//
// Waiters still look after a bounded fallback period (FallbackPoll, or
// RegisteredPoll while the holder has their registration) for what the
// kernel cannot report: another implementation's holders, processes in
// another network namespace, network file systems, a Break.
type doorbell struct {
	side  *sidecar
	ino   *os.File // inotify descriptor, nil when unavailable
	sock  *net.UnixConn
	dev   uint64
	inode uint64

	mu   sync.Mutex
	ch   chan struct{}
	wg   sync.WaitGroup
	dbWd int32 // inotify watch of the database file; -1 if none

	dbChanged atomic.Bool  // the database file may have been replaced
	granted   atomic.Int64 // "granted" datagrams received (grants and requests to look)
	closes    atomic.Int64 // closes of the sidecar (a process exited)

	// onWait receives the registrations of waiters (set by the engine);
	// withGrant when they came with a grant to this process.
	onWait func(r registration, withGrant bool)
	// onGrant learns that (scope, lane) was granted to this process
	// (before the registrations that came with the grant).
	onGrant func(scope, lane string)
	// onLook learns that a waiter of (scope, lane) should look again.
	onLook func(scope, lane string)
}

// registration is what a waiter sends the holder of its lane instead of
// writing its own queue row (which would compete with the holder for
// SQLite's write lock): the holder orders it with the queue rows in the
// transaction that hands the lane over, and passes the registrations it
// did not serve on to the new holder, so the waiter's place in line
// (Arrival) is respected without the waiter touching the table.
type registration struct {
	Scope, Lane, ID, Start       string
	PID, Slot, Priority, Arrival int64
	TTL                          int64
	Enqueued                     int64 // when the waiter arrived, ms since the Unix epoch (aging)
	Forwarded                    bool  `json:",omitempty"` // passed on once by a process that had handed the lane on
}

// bellAddr is the abstract socket address of holder id's engine on the file
// (dev, ino).
func bellAddr(id string, dev, ino uint64) *net.UnixAddr {
	return &net.UnixAddr{Net: "unixgram", Name: fmt.Sprintf("@cleolease/%s/%d:%d", id, dev, ino)}
}

func newDoorbell(side *sidecar, dbPath, holderID string, dev, ino uint64, onWait func(registration, bool), onGrant, onLook func(scope, lane string)) *doorbell {
	b := &doorbell{side: side, ch: make(chan struct{}), dbWd: -1, dev: dev, inode: ino, onWait: onWait, onGrant: onGrant, onLook: onLook}
	if side == nil {
		return b
	}
	if c, err := net.ListenUnixgram("unixgram", bellAddr(holderID, dev, ino)); err == nil {
		// The kernel attaches each sender's credentials (SO_PASSCRED):
		// only processes of this user are listened to (README, Security).
		if rc, err := c.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
			})
		}
		b.sock = c
		b.wg.Add(1)
		go b.recv()
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return b
	}
	if _, err := unix.InotifyAddWatch(fd, side.path, unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return b
	}
	if wd, err := unix.InotifyAddWatch(fd, dbPath, unix.IN_ATTRIB|unix.IN_MOVE_SELF|unix.IN_DELETE_SELF); err == nil {
		b.dbWd = int32(wd)
	}
	b.ino = os.NewFile(uintptr(fd), "inotify:"+side.path)
	b.wg.Add(1)
	go b.watch()
	return b
}

func (b *doorbell) recv() {
	defer b.wg.Done()
	buf := make([]byte, 1<<16)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	uid := uint32(os.Getuid())
	for {
		n, oobn, flags, _, err := b.sock.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		if n == 0 || flags&unix.MSG_TRUNC != 0 || !sentBy(oob[:oobn], uid) {
			continue
		}
		// The registrations it carries are recorded before a grant is
		// counted, so the new holder knows who waits when it looks.
		var regs []registration
		granted := buf[0] == 'G'
		switch {
		case buf[0] == 'l':
			scope, lane, err := decodeLook(buf[:n])
			if err != nil {
				continue
			}
			if b.onLook != nil {
				b.onLook(scope, lane)
			}
			granted = false
		case buf[0] == 'g' || buf[0] == 'w':
			grant, scope, lane, rs, err := decodeWire(buf[:n])
			if err != nil {
				continue
			}
			if grant && b.onGrant != nil {
				b.onGrant(scope, lane)
			}
			regs, granted = rs, grant
		case buf[0] != 'G' && buf[0] != 'W':
			continue
		// JSON bodies: what the first versions sent.
		case n > 1 && buf[0] == 'G' && buf[1] == '{':
			var g grantMsg
			if json.Unmarshal(buf[1:n], &g) == nil {
				if b.onGrant != nil {
					b.onGrant(g.Scope, g.Lane)
				}
				regs = g.Regs
			}
		case n > 1 && buf[1] == '[':
			json.Unmarshal(buf[1:n], &regs)
		case n > 1:
			var r registration
			if json.Unmarshal(buf[1:n], &r) == nil {
				regs = append(regs, r)
			}
		}
		for _, r := range regs {
			if r.ID != "" && b.onWait != nil {
				b.onWait(r, granted)
			}
		}
		if granted {
			b.granted.Add(1)
		}
		b.wake()
	}
}

func (b *doorbell) watch() {
	defer b.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, err := b.ino.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				b.dbChanged.Store(true)
				b.closes.Add(1) // events were lost: everyone looks
			case ev.Wd == b.dbWd:
				b.dbChanged.Store(true)
			case ev.Mask&unix.IN_CLOSE_WRITE != 0:
				b.closes.Add(1)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		b.wake()
	}
}

// wait returns a channel closed at the next ring after this call.
func (b *doorbell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *doorbell) wake() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// grantMsg is what a "granted" datagram carries: the lane, and the
// registrations of its other waiters.
type grantMsg struct {
	Scope, Lane string
	Regs        []registration `json:",omitempty"`
}

// ringGrant tells holder id's engine that (scope, lane) was handed to it,
// and passes it regs, the registrations of the lane's other waiters. A
// datagram carries what fits in maxWireDatagram bytes: the grant carries
// the first ones, and the rest follow as "waiting" datagrams, which the
// new holder keeps because it now knows the grant. Names too long to
// encode travel as a plain request to look.
func (b *doorbell) ringGrant(id, scope, lane string, regs []registration) {
	regs = slices.DeleteFunc(slices.Clone(regs), func(r registration) bool { return !encodable(r) })
	if len(scope) > maxWireString || len(lane) > maxWireString {
		b.send(id, []byte{'G'}) // the grantee finds its grant in the table
		return
	}
	parts := chunks(regs)
	var first []registration
	if len(parts) > 0 {
		first, parts = parts[0], parts[1:]
	}
	msg := encodeGrant(scope, lane, first)
	// The grant is committed: its holder must learn of it (a claim that
	// gave up adopts a late grant only when this datagram arrives). A
	// full receive queue is retried briefly.
	for i := 0; b.sendErr(id, msg) == unix.EAGAIN && i < 20; i++ {
		time.Sleep(100 * time.Microsecond)
	}
	for _, p := range parts {
		b.send(id, encodeWaiting(p))
	}
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

// ringLook tells waiter id's engine that its waiter of (scope, lane)
// should look at the lane again (the process it registered with does not
// hold it).
func (b *doorbell) ringLook(id, scope, lane string) {
	if len(scope) > maxWireString || len(lane) > maxWireString {
		b.send(id, []byte{'G'}) // a plain ring: every waiter looks
		return
	}
	b.send(id, encodeLook(scope, lane))
}

// ringWaiting tells holder id's engine that the waiter reg waits. It
// reports whether the registration reached that engine's socket.
func (b *doorbell) ringWaiting(id string, reg registration) bool {
	return encodable(reg) && b.send(id, encodeWaiting([]registration{reg}))
}

// send delivers msg to holder id's engine and reports whether it reached
// its socket. It never blocks: a datagram to an abstract name nobody binds
// fails at once, and one to a socket whose queue is full (net.unix.
// max_dgram_qlen) fails with EAGAIN instead of waiting (a blocked send
// would hold up a release, or the receiving goroutine, which also sends).
// Best effort: a process not reached finds out by its fallback poll.
func (b *doorbell) send(id string, msg []byte) bool { return b.sendErr(id, msg) == nil }

// sendErr is send returning the error (unix.EAGAIN for a full queue).
func (b *doorbell) sendErr(id string, msg []byte) error {
	if b.sock == nil || id == "" {
		return errNoDoorbell
	}
	rc, err := b.sock.SyscallConn()
	if err != nil {
		return err
	}
	to := &unix.SockaddrUnix{Name: bellAddr(id, b.dev, b.inode).Name}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), msg, unix.MSG_DONTWAIT, to)
		return true // never wait for the socket to become writable
	}); err != nil {
		return err
	}
	return serr
}

var errNoDoorbell = errors.New("no doorbell")

// watched reports whether targeted rings reach this process.
func (b *doorbell) watched() bool { return b.sock != nil }

// exitsWatched reports whether inotify reports other processes' exits
// (closes of the sidecar) to this process.
func (b *doorbell) exitsWatched() bool { return b.ino != nil }

func (b *doorbell) close() {
	if b.sock != nil {
		b.sock.Close()
	}
	if b.ino != nil {
		b.ino.Close()
	}
	b.wg.Wait()
}
