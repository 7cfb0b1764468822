package lease

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// doorbell wakes this process's waiters and linger watcher when something
// happened that may let them proceed, without a fixed sleep, and wakes
// only the process concerned:
//
//   - Each engine receives datagrams on its platform.Bell (on Linux an
//     abstract Unix datagram socket named after its holder id and the
//     file's device and inode; in the portable tier a socket bound to a
//     path; on Windows a mailslot named after the holder id and the
//     file's volume serial number and file index). A waiter sends "waiting" (its registration) to the holder it
//     finds; a holder that hands a lane over sends "granted" to the new
//     holder, with the registrations it did not serve. A plain "granted"
//     (no payload) tells a waiter to look again: the process it
//     registered with does not hold the lane. One datagram, one woken
//     process; sends never block.
//   - A status reader (Engine.Status, Inspect) listening on a bell of its
//     own sends the holder of a lane "who waits?" ('q'); the holder answers
//     with the registrations it holds ('r'), which name the waiters that
//     cannot write their queue rows while SQLite's write lock is taken.
//   - A platform.FileWatch (inotify, on Linux) reports every close of the
//     sidecar — how a crashed process's exit shows up — and a rename,
//     unlink or link-count change of the database file (so the identity
//     check needs a stat only then). Where there is none, a waiter
//     registered with a holder watches that holder's exit
//     (platform.WatchExit: pidfd, kqueue, a process handle).
//
// Waiters still look after a bounded fallback period (fallbackPoll, or
// registeredPoll while the holder has their registration) for what the
// kernel cannot report: another implementation's holders, processes in
// another network namespace, network file systems, a Break. Without a
// transport (the build tag cleolease_pollwake) they poll with a
// capped back-off (pollWakeMin to fallbackPoll).
type doorbell struct {
	// parts are the socket and the file watch once listen made them (nil
	// before; see bellParts).
	parts     atomic.Pointer[bellParts]
	listening func() *bellParts // makes them (newDoorbell); nil once run
	listenMu  sync.Mutex        // orders listen and close
	closed    bool              // close ran (under listenMu): listen makes nothing
	watchExit func(pid int64, exited func()) (stop func(), err error)

	mu sync.Mutex
	ch chan struct{}
	wg sync.WaitGroup
	// done is closed by close: the receiving goroutine ends (a Recv error
	// before that is retried, see recv).
	done      chan struct{}
	closeDone sync.Once

	granted atomic.Int64 // "granted" datagrams received (grants and requests to look)
	exits   atomic.Int64 // exits reported by WatchExit

	// onWait receives the registrations of waiters (set by the engine);
	// withGrant when they came with a grant to this process.
	onWait func(r registration, withGrant bool)
	// onGrant learns that (scope, lane) was granted to this process
	// (after the registrations that came with the grant).
	onGrant func(scope, lane string)
	// onLook learns that a waiter of (scope, lane) should look again.
	onLook func(scope, lane string)
	// onQuery answers a status query: who waits for (scope, lane), to be
	// sent to the engine named reply (see answerQuery).
	onQuery func(reply, scope, lane string)
	// onDBChange learns of a change of the database file the watch
	// reported (set before listen; nil: nothing to do).
	onDBChange func()
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

// bellParts are a doorbell's socket and file watch, either nil where the
// platform (or the build) has none.
type bellParts struct {
	bell    platform.Bell      // nil: no transport
	watch   platform.FileWatch // nil: no file watch
	bellErr error              // why a platform with a transport has no bell (logged at listen)
}

// none is the parts of a doorbell that does not listen (yet).
var none = &bellParts{}

// p returns the doorbell's parts (none before listen).
func (b *doorbell) p() *bellParts {
	if p := b.parts.Load(); p != nil {
		return p
	}
	return none
}

// newDoorbell returns this engine's doorbell, not yet listening: listen
// makes it listen for the engine's datagrams and watch the files, where
// the platform allows; with no liveness locks (locks nil) it does
// neither, and waiters poll. sideBase names the liveness files
// (sidecarBase), dbPath the database.
func newDoorbell(seams osSeams, locks platform.Locks, sideBase, dbPath, holderID string, file platform.FileID, onWait func(registration, bool), onGrant, onLook func(scope, lane string), onQuery func(reply, scope, lane string)) *doorbell {
	b := &doorbell{ch: make(chan struct{}), done: make(chan struct{}), watchExit: seams.watchExit, onWait: onWait, onGrant: onGrant, onLook: onLook, onQuery: onQuery}
	b.listening = func() *bellParts {
		p := &bellParts{}
		if locks == nil {
			return p
		}
		if bell, err := seams.listenBell(sideBase, holderID, file); err == nil {
			p.bell = bell
		} else if !errors.Is(err, platform.ErrUnsupported) {
			p.bellErr = err
		}
		if wp := locks.WatchPath(); wp != "" {
			if w, err := seams.watchFiles(wp, dbPath, b.changed); err == nil {
				p.watch = w
			}
		}
		return p
	}
	return b
}

// listen makes the doorbell listen and watch (once; nothing after close).
func (b *doorbell) listen() {
	b.listenMu.Lock()
	defer b.listenMu.Unlock()
	if b.closed || b.listening == nil {
		return
	}
	p := b.listening()
	b.listening = nil
	b.parts.Store(p)
	if p.bell != nil {
		b.wg.Add(1)
		go b.recv(p.bell)
	}
}

// recv dispatches the datagrams the bell receives (the platform has
// dropped truncated ones and, where the kernel tells, other users'),
// until the doorbell closes. A Recv that fails before then (a transient
// socket error, a mailslot read refused) is tried again after a capped
// back-off (recvRetryMin to recvRetryMax): a receiving goroutine that
// ended would leave this process deaf to grants and registrations until
// it closes, its waiters and holders reduced to their polls.
func (b *doorbell) recv(bell platform.Bell) {
	defer b.wg.Done()
	buf := make([]byte, 1<<16)
	bo := backoff{min: recvRetryMin, max: recvRetryMax}
	for {
		n, err := bell.Recv(buf)
		if err == nil {
			bo.reset()
			b.dispatch(buf[:n])
			continue
		}
		t := time.NewTimer(bo.next())
		select {
		case <-b.done:
			t.Stop()
			return // closed: Recv fails from now on
		case <-t.C:
		}
	}
}

// recvRetryMin and recvRetryMax bound the back-off of a receiving
// goroutine whose Recv failed.
const (
	recvRetryMin = time.Millisecond
	recvRetryMax = time.Second
)

// dispatch acts on one datagram. The registrations it carries are
// recorded before a grant is counted, so the new holder knows who waits
// when it looks.
func (b *doorbell) dispatch(msg []byte) {
	n := len(msg)
	if n == 0 {
		return
	}
	var regs []registration
	granted := msg[0] == 'G'
	// A grant is told after the registrations that came with it: a claim
	// that learns of its grant (onGrant) finds them in the lane's inbox
	// already, for its hold's hand-off (see claimRun.run's end).
	var grantScope, grantLane string
	var grantTold bool
	switch {
	case msg[0] == 'q':
		reply, scope, lane, err := decodeQuery(msg)
		if err == nil && b.onQuery != nil {
			b.onQuery(reply, scope, lane)
		}
		return // a question wakes nobody
	case msg[0] == 'l':
		scope, lane, err := decodeLook(msg)
		if err != nil {
			return
		}
		if b.onLook != nil {
			b.onLook(scope, lane)
		}
		granted = false
	case msg[0] == 'g' || msg[0] == 'w':
		grant, scope, lane, rs, err := decodeWire(msg)
		if err != nil {
			return
		}
		if grant {
			grantScope, grantLane, grantTold = scope, lane, true
		}
		regs, granted = rs, grant
	case msg[0] != 'G' && msg[0] != 'W':
		return
	// JSON bodies: what the first versions sent.
	case n > 1 && msg[0] == 'G' && msg[1] == '{':
		var g grantMsg
		if json.Unmarshal(msg[1:], &g) == nil {
			grantScope, grantLane, grantTold = g.Scope, g.Lane, true
			regs = g.Regs
		}
	case n > 1 && msg[1] == '[':
		json.Unmarshal(msg[1:], &regs)
	case n > 1:
		var r registration
		if json.Unmarshal(msg[1:], &r) == nil {
			regs = append(regs, r)
		}
	}
	for _, r := range regs {
		if r.ID != "" && b.onWait != nil {
			b.onWait(r, granted)
		}
	}
	if grantTold && b.onGrant != nil {
		b.onGrant(grantScope, grantLane)
	}
	if granted {
		b.granted.Add(1)
	}
	b.wake()
}

// wait returns a channel closed at the next ring after this call.
func (b *doorbell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

// changed is the file watch's report: waiters look again, and the engine
// checks its database file when the report is about it (onDBChange: a
// file gone or replaced silences this doorbell at once).
func (b *doorbell) changed() {
	b.wake()
	if f := b.onDBChange; f != nil && b.dbChanged() {
		f()
	}
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

// maxDatagram is the largest datagram the transport carries.
func (b *doorbell) maxDatagram() int {
	bell := b.p().bell
	if bell == nil {
		return 0
	}
	return min(bell.MaxDatagram(), maxWireDatagram)
}

// ringGrant tells holder id's engine that (scope, lane) was handed to it,
// and passes it regs, the registrations of the lane's other waiters. A
// datagram carries what fits in maxDatagram bytes: the grant carries the
// first ones, and the rest follow as "waiting" datagrams, which the new
// holder keeps because it now knows the grant. A lane whose names do not
// fit travels as a plain request to look, and a registration that does not
// fit is not passed on (its waiter, not served, looks by itself and writes
// its own queue row).
func (b *doorbell) ringGrant(id, scope, lane string, regs []registration) {
	limit := b.maxDatagram()
	if limit == 0 {
		return
	}
	if len(scope) > maxWireString || len(lane) > maxWireString || len(encodeGrant(scope, lane, nil)) > limit {
		b.send(id, []byte{'G'}) // the grantee finds its grant in the table
		return
	}
	regs = slices.DeleteFunc(slices.Clone(regs), func(r registration) bool { return !encodable(r) })
	parts := chunks(scope, lane, regs, limit)
	var first []registration
	if len(parts) > 0 {
		first, parts = parts[0], parts[1:]
	}
	msg := encodeGrant(scope, lane, first)
	// The grant is committed: its holder should learn of it at once. A
	// full receive queue is retried briefly; a grant whose datagram is
	// lost all the same is found by its waiter's poll, or, when the
	// waiter has just given up, by its lane's settle (settle.go).
	for i := 0; errors.Is(b.sendErr(id, msg), platform.ErrFull) && i < 20; i++ {
		time.Sleep(100 * time.Microsecond)
	}
	for _, p := range parts {
		b.send(id, encodeWaiting(p))
	}
}

// ringLook tells waiter id's engine that its waiter of (scope, lane)
// should look at the lane again (the process it registered with does not
// hold it).
func (b *doorbell) ringLook(id, scope, lane string) {
	msg := encodeLook(scope, lane)
	if len(scope) > maxWireString || len(lane) > maxWireString || len(msg) > b.maxDatagram() {
		b.send(id, []byte{'G'}) // a plain ring: every waiter looks
		return
	}
	b.send(id, msg)
}

// absent reports whether holder id's engine has no doorbell for this file:
// a look datagram (harmless: its claim looks at the lane once more) was
// refused (ECONNREFUSED). On Linux a doorbell is named after the holder
// and the file's device and inode, so that is proof that the holder has
// not opened this file (it has the original of a copy open, say). A full
// queue, a datagram too large, a process without a doorbell tier, and a
// missing socket file say nothing: the portable tier's socket files live
// in the liveness files' directory, which may have been replaced under a
// live holder that has not followed yet.
func (b *doorbell) absent(id, scope, lane string) bool {
	if len(scope) > maxWireString || len(lane) > maxWireString {
		return false
	}
	msg := encodeLook(scope, lane)
	if len(msg) > b.maxDatagram() {
		return false
	}
	err := b.sendErr(id, msg)
	return errors.Is(err, syscall.ECONNREFUSED)
}

// ringWaiting tells holder id's engine that the waiter reg waits. It
// reports whether the registration reached that engine's socket.
func (b *doorbell) ringWaiting(id string, reg registration) bool {
	return b.ringWaitingErr(id, reg) == nil
}

// ringWaitingErr is ringWaiting with the reason it failed: the socket's
// error (syscall.ECONNREFUSED: holder id's engine has no doorbell on this
// file, see absent), or errNotSent for a registration that does not fit
// a datagram.
func (b *doorbell) ringWaitingErr(id string, reg registration) error {
	if !encodable(reg) {
		return errNotSent
	}
	msg := encodeWaiting([]registration{reg})
	if len(msg) > b.maxDatagram() {
		return errNotSent
	}
	return b.sendErr(id, msg)
}

// errNotSent is ringWaitingErr's answer for a registration no datagram
// can carry.
var errNotSent = errors.New("registration too large for a datagram")

// send delivers msg to holder id's engine and reports whether it reached
// its socket. It never blocks. Best effort: a process not reached finds
// out by its fallback poll.
func (b *doorbell) send(id string, msg []byte) bool { return b.sendErr(id, msg) == nil }

// sendErr is send returning the error (platform.ErrFull for a full queue).
func (b *doorbell) sendErr(id string, msg []byte) error {
	bell := b.p().bell
	if bell == nil || id == "" {
		return errNoDoorbell
	}
	return bell.Send(id, msg)
}

var errNoDoorbell = errors.New("no doorbell")

// watched reports whether targeted rings reach this process.
func (b *doorbell) watched() bool { return b.p().bell != nil }

// exitsWatched reports whether the file watch reports other processes'
// exits (closes of the sidecar) to this process.
func (b *doorbell) exitsWatched() bool { return b.p().watch != nil }

// closes counts the exits reported so far: closes of the sidecar, and
// exits of watched holders.
func (b *doorbell) closes() int64 {
	n := b.exits.Load()
	if w := b.p().watch; w != nil {
		n += w.Closes()
	}
	return n
}

// watchExit rings when process pid exits, until stop is called; nil when
// the platform cannot tell, or the file watch already reports exits.
func (b *doorbell) exitWatch(pid int64) (stop func()) {
	if b.p().watch != nil || pid <= 0 || b.watchExit == nil {
		return nil
	}
	stop, err := b.watchExit(pid, func() {
		b.exits.Add(1)
		b.wake()
	})
	if err != nil {
		return nil
	}
	return stop
}

// dbWatched reports whether the file watch reports changes of the
// database file, and dbChanged whether it reported one since clearDB.
func (b *doorbell) dbWatched() bool { w := b.p().watch; return w != nil && w.DBWatched() }
func (b *doorbell) dbChanged() bool { w := b.p().watch; return w != nil && w.DBChanged() }
func (b *doorbell) clearDB() {
	if w := b.p().watch; w != nil {
		w.ClearDB()
	}
}

// close stops receiving (the receiving goroutine ends) and watching, and
// waits for the receiving goroutine.
// silence closes the doorbell's socket (and ends its receiving
// goroutine) once the engine's database file is gone or replaced: the
// socket is named after the file's inode, which the file system may give
// to a new file at once (ext4 does), and a new engine of this process on
// that file must be able to bind the name, and other processes must find
// it, not this engine, which answers nothing any more. Safe from the
// receiving goroutine itself; close still runs at the engine's Close.
func (b *doorbell) silence() {
	b.closeDone.Do(func() {
		if b.done != nil {
			close(b.done)
		}
	})
	if p := b.p(); p.bell != nil {
		p.bell.Close()
	}
}

func (b *doorbell) close() {
	b.closeDone.Do(func() {
		if b.done != nil {
			close(b.done)
		}
	})
	b.listenMu.Lock()
	b.closed = true
	b.listenMu.Unlock()
	p := b.p()
	if p.bell != nil {
		p.bell.Close()
	}
	if p.watch != nil {
		p.watch.Close()
	}
	b.wg.Wait()
}
