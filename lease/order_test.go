package lease

import (
	"slices"
	"strings"
	"testing"
)

// The grant order, without SQLite: effective priority (aging), then
// arrival where both have one, else ticket; dead and departed waiters
// passed over; another implementation's waiters skipped; this process
// always served.
func TestOrderTable(t *testing.T) {
	const now = 1_000_000
	step := agingStep.Milliseconds()
	w := func(id string, prio, waitedMS, arrival, ticket int64) queued {
		return queued{h: holder{ID: id}, priority: prio, enqueued: now - waitedMS, arrival: arrival, ticket: ticket, row: ticket > 0}
	}
	ids := func(ws []queued) string {
		var s []string
		for _, w := range ws {
			s = append(s, w.h.ID)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		name string
		ws   []queued
		want string
	}{
		{"fifo by ticket", []queued{w("c", 100, 0, 0, 3), w("a", 100, 0, 0, 1), w("b", 100, 0, 0, 2)}, "a,b,c"},
		{"arrival beats ticket", []queued{w("a", 100, 0, 2, 1), w("b", 100, 0, 1, 2)}, "b,a"},
		{"ticket where one has no arrival", []queued{w("a", 100, 0, 0, 1), w("b", 100, 0, 1, 2)}, "a,b"},
		{"lower priority first", []queued{w("a", 100, 0, 1, 1), w("b", 0, 0, 2, 2)}, "b,a"},
		{"aging overtakes", []queued{w("old", 100, 101*step, 1, 1), w("new", 0, 0, 2, 2)}, "old,new"},
		{"aging not yet", []queued{w("old", 100, 99*step, 1, 1), w("new", 0, 0, 2, 2)}, "new,old"},
		{"equal effective priority: arrival", []queued{w("new", 0, 0, 2, 2), w("old", 100, 100*step, 1, 1)}, "old,new"},
		{"future enqueue does not age backwards", []queued{w("a", 100, -50*step, 1, 1), w("b", 100, 0, 2, 2)}, "a,b"},
		{"registration without row", []queued{w("row", 100, 0, 5, 1), w("reg", 100, 0, 3, 0)}, "reg,row"},
	} {
		ws := slices.Clone(c.ws)
		order(ws, now)
		if got := ids(ws); got != c.want {
			t.Errorf("%s: order %s, want %s", c.name, got, c.want)
		}
	}

	dead := map[string]bool{"dead": true, "gone": true}
	serves := func(w queued) bool { return !dead[w.h.ID] }
	for _, c := range []struct {
		name    string
		ws      []queued
		first   string
		skipped string
	}{
		{"empty", nil, "", ""},
		{"first live", []queued{w("a", 100, 0, 1, 1), w("b", 100, 0, 2, 2)}, "a", ""},
		{"dead passed over", []queued{w("dead", 100, 0, 1, 1), w("gone", 100, 0, 2, 2), w("b", 100, 0, 3, 3)}, "b", "dead,gone"},
		{"all dead", []queued{w("dead", 100, 0, 1, 1)}, "", "dead"},
		{"foreign skipped unjudged", []queued{{h: holder{ID: "other"}, priority: 0, enqueued: now, ticket: 1, foreign: true}, w("b", 100, 0, 2, 2)}, "b", ""},
		{"self always served", []queued{w("dead", 100, 0, 1, 1), w("me", 100, 0, 2, 2), w("b", 100, 0, 3, 3)}, "me", "dead"},
	} {
		ws := slices.Clone(c.ws)
		var judged []string
		i, skipped := pick(ws, now, "me", func(w queued) bool { judged = append(judged, w.h.ID); return serves(w) })
		first := ""
		if i >= 0 {
			first = ws[i].h.ID
		}
		var sk []string
		for _, j := range skipped {
			sk = append(sk, ws[j].h.ID)
		}
		if first != c.first || strings.Join(sk, ",") != c.skipped {
			t.Errorf("%s: first %q skipped %v, want %q %q", c.name, first, sk, c.first, c.skipped)
		}
		for _, id := range judged {
			if id == "other" || id == "me" {
				t.Errorf("%s: judged %s", c.name, id)
			}
		}
	}

	// Registrations join the queue rows unless their waiter has a row.
	rows := []queued{w("a", 100, 0, 1, 1)}
	regs := []registration{{ID: "a", Priority: 0, Arrival: 9}, {ID: "b", Priority: 5, Arrival: 2, Enqueued: now, TTL: 7, Slot: 3, PID: 4, Start: "s"}}
	got := withRegistrations(slices.Clone(rows), regs)
	if len(got) != 2 || got[0].priority != 100 || got[1].h != (holder{ID: "b", PID: 4, Start: "s", Slot: 3}) ||
		got[1].priority != 5 || got[1].arrival != 2 || got[1].ttl != 7 || got[1].row {
		t.Fatalf("withRegistrations: %+v", got)
	}
}
