package sqlbase

import "testing"

func TestParsePragma(t *testing.T) {
	for v, want := range map[string]Pragma{
		"busy_timeout(5000)":        {Name: "busy_timeout", Value: "5000", Set: true},
		" Busy_Timeout = 5000 ;":    {Name: "busy_timeout", Value: "5000", Set: true},
		"main.journal_mode('WAL')":  {Schema: "main", Name: "journal_mode", Value: "WAL", Set: true},
		"temp . cache_size ( -20 )": {Schema: "temp", Name: "cache_size", Value: "-20", Set: true},
		"journal_mode":              {Name: "journal_mode"},
	} {
		got, ok := ParsePragma(v)
		got.Text = ""
		if !ok || got != want {
			t.Errorf("ParsePragma(%q) = %+v, %v; want %+v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "(1)", "x(1", "x(1);y", "x=1;y", "x=", "x()", "x 1", "1x(1)"} {
		if p, ok := ParsePragma(v); ok {
			t.Errorf("ParsePragma(%q) = %+v, true", v, p)
		}
	}
}

func TestBusyFirst(t *testing.T) {
	for in, want := range map[string]string{
		"file:x.db":                           "file:x.db",
		"file:x.db?_pragma=journal_mode(WAL)": "file:x.db?_pragma=journal_mode(WAL)",
		"file:x.db?_pragma=busy_timeout(5)&_pragma=journal_mode(WAL)":                             "file:x.db?_pragma=busy_timeout(5)&_pragma=journal_mode(WAL)",
		"file:x.db?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5)":                             "file:x.db?_pragma=busy_timeout(5)&_pragma=journal_mode(WAL)",
		"x.db?_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=BUSY_TIMEOUT%3D7&_pragma=fk(1)": "x.db?_pragma=BUSY_TIMEOUT%3D7&_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=fk(1)",
		"file:x.db?_pragma=busy_timeouts(5)&_pragma=journal_mode(WAL)":                            "file:x.db?_pragma=busy_timeouts(5)&_pragma=journal_mode(WAL)",
		"file:x.db?_pragma=journal_mode(WAL)&_busy_timeout=5":                                     "file:x.db?_pragma=journal_mode(WAL)&_busy_timeout=5",
	} {
		if got := BusyFirst(in); got != want {
			t.Errorf("BusyFirst(%q) = %q, want %q", in, got, want)
		}
	}
}
