package main

import (
	"fmt"
	"strings"
)

// knownFailure is one line of known_failures.txt: a test (a subtest by its
// full name) that fails through cleolease, and the README difference that
// explains it.
type knownFailure struct {
	test       string
	difference string
}

// parseKnown reads known_failures.txt: one test a line, its name, white
// space, then the README difference (required); blank lines and lines
// starting with '#' are ignored. A test listed twice is an error.
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
		if seen[name] {
			return nil, fmt.Errorf("known_failures.txt:%d: %s listed twice", i+1, name)
		}
		seen[name] = true
		out = append(out, knownFailure{test: name, difference: diff})
	}
	return out, nil
}
