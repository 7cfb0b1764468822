package main

import "github.com/cleocode/cleolease/internal/suiterun"

// leftOut lists what of ncruces's driver test files is not copied: whole
// files (no Decl) or top-level declarations, each with the reason —
// always that it tests a name ncruces's driver package does not export,
// which a test of another package, through cleolease-ncruces, cannot reach.
var leftOut = []suiterun.LeftOut{
	{File: "time_test.go", Reason: "fuzzes rows.maybeTime (unexported: ncruces's guess of which strings are times) on a bare rows value; no connection is opened"},
	{File: "util_test.go", Decl: "Test_namedValues", Reason: "calls namedValues, unexported"},
	{File: "util_test.go", Decl: "Fuzz_notWhitespace", Reason: "calls notWhitespace, unexported, and takes the connection as ncruces's *conn"},
}
