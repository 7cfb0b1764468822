package main

import (
	"fmt"
	"slices"
	"strings"
)

// knownFailure is one test (a subtest by its full name) that fails through
// cleolease-ncruces in one pass, and the README difference that explains
// it.
type knownFailure struct {
	test       string // pass:Name
	difference string
}

// parseKnown reads known_failures.txt: one test a line, its name — "Name"
// for both passes, "memdb:Name" or "files:Name" for one — white space, then
// the README difference (required); blank lines and lines starting with '#'
// are ignored. A test listed twice for a pass is an error. It returns the
// entries with pass-qualified names, in the list's order.
func parseKnown(text string) ([]knownFailure, error) {
	var out []knownFailure
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
		in := passes
		if p, n, ok := strings.Cut(name, ":"); ok {
			if !slices.Contains(passes, p) {
				return nil, fmt.Errorf("known_failures.txt:%d: %s: no pass %q (%s)", i+1, name, p, strings.Join(passes, ", "))
			}
			in, name = []string{p}, n
		}
		for _, p := range in {
			q := p + ":" + name
			if seen[q] {
				return nil, fmt.Errorf("known_failures.txt:%d: %s listed twice", i+1, q)
			}
			seen[q] = true
			out = append(out, knownFailure{test: q, difference: diff})
		}
	}
	return out, nil
}
