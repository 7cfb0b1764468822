package lease

import (
	"reflect"
	"testing"
)

var wireRegs = []registration{
	{Scope: "main", Lane: "jobs", ID: "cl-3f0c", Start: "boot/4026531836/123456/789", PID: 4242, Slot: 17,
		Priority: 100, Arrival: 99, TTL: 30000, Enqueued: 1796012723685},
	{Scope: "main", Lane: "jobs", ID: "cl-77aa", PID: 1, Priority: -5, Arrival: 1 << 40, Forwarded: true},
}

func TestWireRoundTrip(t *testing.T) {
	grant, scope, lane, regs, err := decodeWire(encodeGrant("main", "jobs", wireRegs))
	if err != nil || !grant || scope != "main" || lane != "jobs" || !reflect.DeepEqual(regs, wireRegs) {
		t.Fatalf("grant: %v %q %q %+v %v", grant, scope, lane, regs, err)
	}
	if scope, lane, err := decodeLook(encodeLook("main", "jobs")); err != nil || scope != "main" || lane != "jobs" {
		t.Fatalf("look: %q %q %v", scope, lane, err)
	}
	grant, _, _, regs, err = decodeWire(encodeWaiting(wireRegs[1:]))
	if err != nil || grant || !reflect.DeepEqual(regs, wireRegs[1:]) {
		t.Fatalf("waiting: %v %+v %v", grant, regs, err)
	}
	if _, _, _, regs, err := decodeWire(encodeGrant("s", "l", nil)); err != nil || len(regs) != 0 {
		t.Fatalf("empty grant: %+v %v", regs, err)
	}
}

// Any local process can write to the doorbell: every truncation, an extra
// byte, a wrong version, a count the datagram cannot hold and an
// over-long string are refused, whole.
func TestWireRejectsMalformed(t *testing.T) {
	msg := encodeGrant("main", "jobs", wireRegs)
	for n := 0; n < len(msg); n++ {
		if _, _, _, _, err := decodeWire(msg[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: accepted", n, len(msg))
		}
	}
	bad := map[string][]byte{
		"extra byte":    append(append([]byte{}, msg...), 0),
		"version":       append([]byte{'g', wireVersion + 1}, msg[2:]...),
		"kind":          append([]byte{'x'}, msg[1:]...),
		"huge count":    {'w', wireVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"long string":   append([]byte{'g', wireVersion, 0x81, 0x10}, make([]byte, 2049)...),
		"string beyond": {'g', wireVersion, 5, 'a'},
	}
	for name, b := range bad {
		if _, _, _, _, err := decodeWire(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeWire(f *testing.F) {
	f.Add(encodeGrant("main", "jobs", wireRegs))
	f.Add(encodeWaiting(wireRegs))
	f.Add([]byte{'w', wireVersion, 0})
	f.Add(encodeLook("main", "jobs"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if scope, lane, err := decodeLook(msg); err == nil {
			if s2, l2, err := decodeLook(encodeLook(scope, lane)); err != nil || s2 != scope || l2 != lane {
				t.Fatalf("look %q %q re-encodes to %q %q %v", scope, lane, s2, l2, err)
			}
		}
		grant, scope, lane, regs, err := decodeWire(msg)
		if err != nil {
			return
		}
		var again []byte
		if grant {
			again = encodeGrant(scope, lane, regs)
		} else {
			again = encodeWaiting(regs)
		}
		g2, s2, l2, r2, err := decodeWire(again)
		if err != nil || g2 != grant || s2 != scope || l2 != lane || len(r2) != len(regs) || (len(regs) > 0 && !reflect.DeepEqual(r2, regs)) {
			t.Fatalf("re-encoding changed the datagram: %v %q %q %+v → %v %q %q %+v %v", grant, scope, lane, regs, g2, s2, l2, r2, err)
		}
	})
}

// Registrations are split so that every datagram fits the transport's
// limit (recv's buffer on Linux, 2,048 bytes in the portable tier), and
// names too long for the decoder are never encoded; a registration that
// cannot fit even alone is left out.
func TestWireChunksFitADatagram(t *testing.T) {
	long := string(make([]byte, maxWireString))
	var regs []registration
	for i := 0; i < 200; i++ {
		regs = append(regs, registration{Scope: long, Lane: long, ID: "cl-" + long[:900], Start: long[:500], Slot: int64(i + 1), PID: 1 << 40, Arrival: 1 << 50})
	}
	short := []registration{}
	for i := 0; i < 200; i++ {
		short = append(short, registration{Scope: "project", Lane: "tasks", ID: "cl-0123456789abcdef0123456789abcdef0123", Start: "boot/pid:[4026531836]/123456/98765", Slot: int64(i + 1), PID: 1 << 20, Arrival: 1 << 30})
	}
	for _, c := range []struct {
		scope, lane string
		regs        []registration
		limit, want int
	}{
		{long, long, regs, maxWireDatagram, len(regs)},
		{long, long, regs, 2048, 0},            // a grant of these names alone nearly fills it
		{"project", "tasks", short, 2048, 200}, // typical names: many per datagram
		{"project", "tasks", regs, 2048, 0},    // each too large alone
	} {
		n := 0
		for _, ch := range chunks(c.scope, c.lane, c.regs, c.limit) {
			n += len(ch)
			if len(ch) == 0 {
				t.Fatal("empty chunk")
			}
			if m := encodeGrant(c.scope, c.lane, ch); len(m) > c.limit {
				t.Fatalf("a chunk of %d registrations encodes to %d bytes, over %d", len(ch), len(m), c.limit)
			}
			if _, _, _, got, err := decodeWire(encodeGrant(c.scope, c.lane, ch)); err != nil || len(got) != len(ch) {
				t.Fatalf("chunk does not decode: %d of %d, %v", len(got), len(ch), err)
			}
		}
		if n != c.want {
			t.Fatalf("limit %d: chunks hold %d registrations, want %d", c.limit, n, c.want)
		}
	}
	if encodable(registration{Scope: long + "x"}) || !encodable(registration{Scope: long}) {
		t.Fatal("encodable disagrees with the decoder's limit")
	}
}

// TestWireQueryAnswer: status's question to a holder and the holder's
// answer round-trip, and every truncation of either is refused.
func TestWireQueryAnswer(t *testing.T) {
	q := encodeQuery("st-1", "main", "jobs")
	if reply, scope, lane, err := decodeQuery(q); err != nil || reply != "st-1" || scope != "main" || lane != "jobs" {
		t.Fatalf("query: %q %q %q %v", reply, scope, lane, err)
	}
	a := encodeAnswer("main", "jobs", 3, wireRegs)
	scope, lane, total, regs, err := decodeAnswer(a)
	if err != nil || scope != "main" || lane != "jobs" || total != 3 || !reflect.DeepEqual(regs, wireRegs) {
		t.Fatalf("answer: %q %q %d %+v %v", scope, lane, total, regs, err)
	}
	for n := 0; n < len(q); n++ {
		if _, _, _, err := decodeQuery(q[:n]); err == nil {
			t.Fatalf("query truncated to %d of %d bytes: accepted", n, len(q))
		}
	}
	for n := 0; n < len(a); n++ {
		if _, _, _, _, err := decodeAnswer(a[:n]); err == nil {
			t.Fatalf("answer truncated to %d of %d bytes: accepted", n, len(a))
		}
	}
	if _, _, _, err := decodeQuery(encodeQuery("", "main", "jobs")); err == nil {
		t.Fatal("a query without a reply address: accepted")
	}
}
