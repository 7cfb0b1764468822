package lease

import (
	"encoding/binary"
	"errors"
)

// The doorbell's datagrams (see doorbell). A plain 'G' asks a waiter to
// look at its lanes again. The others carry a compact binary body, version
// wireVersion, encoded and decoded in microseconds (they are on the path of
// every cross-process hand-off):
//
//	'g' wireVersion string(scope) string(lane) uvarint(n) n × registration   a grant
//	'w' wireVersion uvarint(n) n × registration                              waiting
//	'l' wireVersion string(scope) string(lane)                               look at the lane
//	'q' wireVersion string(reply) string(scope) string(lane)                 who waits? (status)
//	'r' wireVersion string(scope) string(lane) uvarint(total) uvarint(n) n × registration
//	                                                                         an answer to 'q'
//
// A 'q' asks the holder of (scope, lane) for the registrations it holds
// (see registration); reply is the holder id the asker listens as. The
// holder answers with as many 'r' datagrams as the registrations need,
// each carrying some of the total.
//
//	registration: string(scope) string(lane) string(id) string(start)
//	              varint(pid) varint(slot) varint(priority) varint(arrival)
//	              varint(ttl) varint(enqueued) byte(flags: 1 = forwarded)
//	string:       uvarint(length ≤ maxWireString) bytes
//
// Any local process can send to the socket: decoding checks every length
// and rejects the whole datagram on the first inconsistency.

const (
	wireVersion   = 1
	maxWireString = 1024
)

var errWire = errors.New("malformed doorbell datagram")

// maxWireDatagram bounds an encoded datagram (recv reads up to 64 KiB);
// the transport may allow less (platform.Bell.MaxDatagram: 2,048 bytes in
// the portable tier).
const maxWireDatagram = 60 << 10

// encodable reports whether r can travel in a datagram (its strings fit
// maxWireString); one that cannot is never sent, so its waiter writes its
// own queue row instead.
func encodable(r registration) bool {
	return len(r.Scope) <= maxWireString && len(r.Lane) <= maxWireString &&
		len(r.ID) <= maxWireString && len(r.Start) <= maxWireString
}

// wireSize bounds the encoded size of r.
func wireSize(r registration) int {
	return len(r.Scope) + len(r.Lane) + len(r.ID) + len(r.Start) + 4*binary.MaxVarintLen16 + 6*binary.MaxVarintLen64 + 1
}

// chunks splits regs (all encodable) into runs that each fit a datagram
// of limit bytes together with a grant of (scope, lane). A registration
// that does not fit even alone is left out (its waiter is not served by
// this grant, and writes its own queue row).
func chunks(scope, lane string, regs []registration, limit int) [][]registration {
	var out [][]registration
	header := len(encodeGrant(scope, lane, nil)) + binary.MaxVarintLen64
	var cur []registration
	size := header
	for _, r := range regs {
		n := wireSize(r)
		if header+n > limit {
			continue
		}
		if size+n > limit && len(cur) > 0 {
			out = append(out, cur)
			cur, size = nil, header
		}
		cur = append(cur, r)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func appendWireString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendRegistrations(b []byte, regs []registration) []byte {
	b = binary.AppendUvarint(b, uint64(len(regs)))
	for _, r := range regs {
		for _, s := range [...]string{r.Scope, r.Lane, r.ID, r.Start} {
			b = appendWireString(b, s)
		}
		for _, v := range [...]int64{r.PID, r.Slot, r.Priority, r.Arrival, r.TTL, r.Enqueued} {
			b = binary.AppendVarint(b, v)
		}
		var flags byte
		if r.Forwarded {
			flags |= 1
		}
		b = append(b, flags)
	}
	return b
}

// encodeGrant returns the 'g' datagram granting (scope, lane) with regs.
func encodeGrant(scope, lane string, regs []registration) []byte {
	b := []byte{'g', wireVersion}
	b = appendWireString(b, scope)
	b = appendWireString(b, lane)
	return appendRegistrations(b, regs)
}

// encodeLook returns the 'l' datagram asking a waiter of (scope, lane) to
// look at the lane again.
func encodeLook(scope, lane string) []byte {
	b := []byte{'l', wireVersion}
	b = appendWireString(b, scope)
	return appendWireString(b, lane)
}

// decodeLook decodes an 'l' datagram.
func decodeLook(msg []byte) (scope, lane string, err error) {
	if len(msg) < 2 || msg[0] != 'l' || msg[1] != wireVersion {
		return "", "", errWire
	}
	r := &wireReader{b: msg[2:]}
	scope, lane = r.string(), r.string()
	if r.err == nil && len(r.b) != 0 {
		r.err = errWire
	}
	return scope, lane, r.err
}

// encodeWaiting returns the 'w' datagram carrying regs.
func encodeWaiting(regs []registration) []byte {
	return appendRegistrations([]byte{'w', wireVersion}, regs)
}

// wireReader decodes one datagram body; err sticks at the first problem.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errWire
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errWire
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) string() string {
	n := r.uvarint()
	if r.err != nil || n > maxWireString || n > uint64(len(r.b)) {
		r.err = errWire
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *wireReader) registrations() []registration {
	n := r.uvarint()
	// Each registration takes at least 11 bytes: no count larger than the
	// datagram could hold is believed (nor allocated for).
	if r.err != nil || n > uint64(len(r.b))/11 {
		r.err = errWire
		return nil
	}
	regs := make([]registration, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		g := registration{Scope: r.string(), Lane: r.string(), ID: r.string(), Start: r.string()}
		g.PID, g.Slot, g.Priority, g.Arrival, g.TTL, g.Enqueued = r.varint(), r.varint(), r.varint(), r.varint(), r.varint(), r.varint()
		if r.err == nil && len(r.b) == 0 {
			r.err = errWire
		}
		if r.err == nil {
			g.Forwarded = r.b[0]&1 != 0
			r.b = r.b[1:]
			regs = append(regs, g)
		}
	}
	return regs
}

// decodeWire decodes a 'g' or 'w' datagram: grant reports a 'g' and its
// lane (scope, lane); regs are the registrations carried.
func decodeWire(msg []byte) (grant bool, scope, lane string, regs []registration, err error) {
	if len(msg) < 2 || (msg[0] != 'g' && msg[0] != 'w') || msg[1] != wireVersion {
		return false, "", "", nil, errWire
	}
	r := &wireReader{b: msg[2:]}
	grant = msg[0] == 'g'
	if grant {
		scope, lane = r.string(), r.string()
	}
	regs = r.registrations()
	if r.err == nil && len(r.b) != 0 {
		r.err = errWire
	}
	if r.err != nil {
		return false, "", "", nil, r.err
	}
	return grant, scope, lane, regs, nil
}

// encodeQuery returns the 'q' datagram asking the holder of (scope, lane)
// for its registrations, to be answered to the engine named reply.
func encodeQuery(reply, scope, lane string) []byte {
	b := []byte{'q', wireVersion}
	b = appendWireString(b, reply)
	b = appendWireString(b, scope)
	return appendWireString(b, lane)
}

// decodeQuery decodes a 'q' datagram.
func decodeQuery(msg []byte) (reply, scope, lane string, err error) {
	if len(msg) < 2 || msg[0] != 'q' || msg[1] != wireVersion {
		return "", "", "", errWire
	}
	r := &wireReader{b: msg[2:]}
	reply, scope, lane = r.string(), r.string(), r.string()
	if r.err == nil && (len(r.b) != 0 || reply == "") {
		r.err = errWire
	}
	return reply, scope, lane, r.err
}

// encodeAnswer returns an 'r' datagram: regs, part of the total
// registrations the holder holds for (scope, lane).
func encodeAnswer(scope, lane string, total int, regs []registration) []byte {
	b := []byte{'r', wireVersion}
	b = appendWireString(b, scope)
	b = appendWireString(b, lane)
	b = binary.AppendUvarint(b, uint64(total))
	return appendRegistrations(b, regs)
}

// decodeAnswer decodes an 'r' datagram.
func decodeAnswer(msg []byte) (scope, lane string, total int, regs []registration, err error) {
	if len(msg) < 2 || msg[0] != 'r' || msg[1] != wireVersion {
		return "", "", 0, nil, errWire
	}
	r := &wireReader{b: msg[2:]}
	scope, lane = r.string(), r.string()
	t := r.uvarint()
	if r.err == nil && t > 1<<20 {
		r.err = errWire
	}
	regs = r.registrations()
	if r.err == nil && len(r.b) != 0 {
		r.err = errWire
	}
	if r.err != nil {
		return "", "", 0, nil, r.err
	}
	return scope, lane, int(t), regs, nil
}
