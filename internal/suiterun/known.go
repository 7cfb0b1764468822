package suiterun

import (
	"fmt"
	"slices"
	"strings"
)

// KnownFailure is one line of a command's known_failures.txt: a test (a
// subtest by its full name) that fails through cleolease, and the README
// difference that explains it.
type KnownFailure struct {
	Test       string // the test's name; "pass:Name" when the command runs passes
	Difference string
}

// ParseKnown reads known_failures.txt: one test a line, its name, white
// space, then the README difference (required); blank lines and lines
// starting with '#' are ignored. A test listed twice is an error.
//
// With passes (the names of the runs of the tests a command makes), a name
// is "Name" for every pass or "pass:Name" for one; the entries it returns
// are then pass-qualified, "Name" giving one entry a pass, in the list's
// order, and a test listed twice for a pass is an error. Without passes,
// names are taken as they are.
func ParseKnown(text string, passes []string) ([]KnownFailure, error) {
	var out []KnownFailure
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, diff, _ := strings.Cut(line, " ")
		if t, d, ok := strings.Cut(line, "\t"); ok && len(t) < len(name) {
			name, diff = t, d
		}
		diff = strings.TrimSpace(diff)
		if diff == "" {
			return nil, fmt.Errorf("known_failures.txt:%d: %s names no README difference", i+1, name)
		}
		names := []string{name}
		if passes != nil {
			in := passes
			if p, n, ok := strings.Cut(name, ":"); ok {
				if !slices.Contains(passes, p) {
					return nil, fmt.Errorf("known_failures.txt:%d: %s: no pass %q (%s)", i+1, name, p, strings.Join(passes, ", "))
				}
				in, name = []string{p}, n
			}
			names = nil
			for _, p := range in {
				names = append(names, p+":"+name)
			}
		}
		for _, q := range names {
			if seen[q] {
				return nil, fmt.Errorf("known_failures.txt:%d: %s listed twice", i+1, q)
			}
			seen[q] = true
			out = append(out, KnownFailure{Test: q, Difference: diff})
		}
	}
	return out, nil
}
