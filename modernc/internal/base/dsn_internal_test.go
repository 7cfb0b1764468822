package base

import "testing"

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
		if got := busyFirst(in); got != want {
			t.Errorf("busyFirst(%q) = %q, want %q", in, got, want)
		}
	}
}
