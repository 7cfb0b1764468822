package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkWidth fails for every line of out wider than width columns, except
// a line that is one word (a long path) alone.
func checkWidth(t *testing.T, what, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width && len(strings.Fields(line)) > 1 {
			t.Errorf("%s, line %d: %d columns, want at most %d:\n%s", what, i+1, n, width, line)
		}
	}
}

func TestWrap(t *testing.T) {
	long := strings.Repeat("x", width+5)
	for _, tc := range []struct{ first, rest, text, want string }{
		{"", "", "a b c", "a b c"},
		{"note: ", "  ", "a\n b\t c ", "note: a b c"},
		{"", "", "a " + long + " b", "a\n" + long + "\nb"},
		{"  ", "  ", long, "  " + long},
		{"", "    ", strings.Repeat("word ", 30), strings.TrimSpace(strings.Repeat("word ", 20)) + "\n    " + strings.TrimSpace(strings.Repeat("word ", 10))},
	} {
		if got := wrap(tc.first, tc.rest, tc.text); got != tc.want {
			t.Errorf("wrap(%q, %q, %q) =\n%s\nwant\n%s", tc.first, tc.rest, tc.text, got, tc.want)
		}
		checkWidth(t, "wrap", wrap(tc.first, tc.rest, tc.text))
	}
}

// TestHelpWidth: the help of every command, the hidden worker included,
// fits in width columns (issue 21, item 4).
func TestHelpWidth(t *testing.T) {
	helps := [][]string{{"--help"}, {"help"}}
	for _, c := range newRoot(nil, nil).Commands() {
		helps = append(helps, []string{c.Name(), "--help"}, []string{"help", c.Name()})
	}
	for _, args := range helps {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("cleolease %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		checkWidth(t, "cleolease "+strings.Join(args, " "), out.String())
	}
}
