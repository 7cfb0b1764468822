package main

import "fmt"

// leftOut lists what of ncruces's driver test files is not copied: whole
// files (decl empty) or top-level declarations, each with the reason —
// always that it tests a name ncruces's driver package does not export,
// which a test of another package, through cleolease-ncruces, cannot reach.
var leftOut = []struct {
	file, decl, reason string
}{
	{"time_test.go", "", "fuzzes rows.maybeTime (unexported: ncruces's guess of which strings are times) on a bare rows value; no connection is opened"},
	{"util_test.go", "Test_namedValues", "calls namedValues, unexported"},
	{"util_test.go", "Fuzz_notWhitespace", "calls notWhitespace, unexported, and takes the connection as ncruces's *conn"},
}

// leftOutByFile returns leftOut as the declarations to drop per file and
// the files to skip.
func leftOutByFile() (map[string]map[string]bool, map[string]bool, error) {
	byFile := map[string]map[string]bool{}
	whole := map[string]bool{}
	for _, l := range leftOut {
		if l.reason == "" {
			return nil, nil, fmt.Errorf("leftout.go: %s %s has no reason", l.file, l.decl)
		}
		if l.decl == "" {
			whole[l.file] = true
			continue
		}
		if byFile[l.file] == nil {
			byFile[l.file] = map[string]bool{}
		}
		byFile[l.file][l.decl] = true
	}
	return byFile, whole, nil
}
