package lease

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/google/uuid"
)

// A waiter that registered with the holder (see registration) has no queue
// row until it can write one, which it cannot while the holder's
// transaction keeps SQLite's write lock. Status readers (Engine.Status,
// Inspect, so `cleolease status`) therefore ask the holder, over the
// doorbell, who waits: the holder's doorbell goroutine answers from the
// registrations it holds in memory, whatever the holder's own goroutines
// are doing. Nobody writes anything for it, and a waiter pays nothing.
//
// What the holder cannot tell — it is stopped, it is another
// implementation, or this build or the holder's has no doorbell (the
// build tag cleolease_pollwake) — the want locks still count
// (LaneStatus.Waiting), without names; LaneStatus.Note says why.

// holderAnswerWait bounds how long a status read waits for a holder's
// answer. A live holder answers within a millisecond or so; only a stopped
// one makes a status read wait this long.
const holderAnswerWait = 500 * time.Millisecond

// holderQuery asks holder id who waits for (scope, lane).
type holderQuery struct{ id, scope, lane string }

// holderAnswer is what a holder said: the registrations it holds for the
// lane (answered), or why it said nothing (why).
type holderAnswer struct {
	regs     []registration
	total    int
	answered bool
	why      string
}

// noDoorbell explains names missing in a build without a transport.
const noDoorbell = "this build has no doorbell (build tag cleolease_pollwake), so the holder cannot be asked"

// askHolders sends each query to its holder from a bell of its own (an
// abstract socket on Linux; a socket file in the lock directory, removed
// before it returns, in the portable tier) and collects the answers until
// every holder answered or wait passed. The result has an entry per
// queried lane; note is set when no holder could be asked at all.
func askHolders(dbPath string, file platform.FileID, qs []holderQuery, wait time.Duration) (answers map[laneKey]*holderAnswer, note string) {
	if len(qs) == 0 {
		return nil, ""
	}
	if platform.PollWake {
		return nil, noDoorbell
	}
	id := "st-" + uuid.NewString()
	bell, err := platform.ListenBell(dbPath, id, file)
	if err != nil {
		return nil, "cannot listen for the holder's answer: " + err.Error()
	}
	msgs := make(chan []byte, 16)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<16)
		for {
			n, err := bell.Recv(buf)
			if err != nil {
				return
			}
			select {
			case msgs <- append([]byte(nil), buf[:n]...):
			case <-stop:
				return
			}
		}
	}()
	defer func() {
		close(stop)
		bell.Close() // ends Recv
		<-done
	}()
	answers = map[laneKey]*holderAnswer{}
	pending := 0
	for _, q := range qs {
		a := &holderAnswer{}
		answers[laneKey{q.scope, q.lane}] = a
		if len(q.scope) > maxWireString || len(q.lane) > maxWireString {
			a.why = "the lane's names are too long for a datagram"
			continue
		}
		msg := encodeQuery(id, q.scope, q.lane)
		if len(msg) > bell.MaxDatagram() {
			a.why = "the lane's names are too long for a datagram"
			continue
		}
		if err := bell.Send(q.id, msg); err != nil {
			a.why = "the holder has no doorbell to ask (built with cleolease_pollwake, or another implementation): " + err.Error()
			continue
		}
		a.why = fmt.Sprintf("the holder did not answer within %v (stopped, or very busy)", wait)
		pending++
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for pending > 0 {
		select {
		case <-timer.C:
			return answers, ""
		case msg := <-msgs:
			scope, lane, total, regs, err := decodeAnswer(msg)
			if err != nil {
				continue
			}
			a := answers[laneKey{scope, lane}]
			if a == nil || a.answered {
				continue
			}
			for _, r := range regs {
				if !slices.ContainsFunc(a.regs, func(x registration) bool { return x.ID == r.ID }) {
					a.regs = append(a.regs, r)
				}
			}
			a.total = total
			if len(a.regs) >= total {
				a.answered, a.why = true, ""
				pending--
			}
		}
	}
	return answers, ""
}

// answerQuery answers a status reader's 'q' for (scope, lane): the
// registrations this process holds for the lane (none when it does not
// hold it, or never used it), in as many 'r' datagrams as they need. It
// runs on the doorbell's goroutine, so it answers while the holder's own
// goroutines are inside a transaction.
func (e *Engine) answerQuery(reply, scope, lane string) {
	var regs []registration
	if l := e.knownLane(scope, lane); l != nil {
		l.mu.Lock()
		for _, r := range l.inbox.pending {
			if encodable(r) {
				regs = append(regs, r)
			}
		}
		l.mu.Unlock()
	}
	slices.SortFunc(regs, func(a, b registration) int { return cmp.Compare(a.Arrival, b.Arrival) })
	// Each part leaves room for the total beside the grant-sized header
	// chunks reckons with.
	parts := chunks(scope, lane, regs, e.bell.maxDatagram()-10)
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total == 0 {
		e.bell.send(reply, encodeAnswer(scope, lane, 0, nil))
		return
	}
	for _, p := range parts {
		e.bell.send(reply, encodeAnswer(scope, lane, total, p))
	}
}
