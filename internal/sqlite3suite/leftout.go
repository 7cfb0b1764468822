package main

import "fmt"

// leftOut lists what of go-sqlite3's test files is not copied: whole files
// (decl empty) or top-level declarations, each with the reason — always
// that it uses a name go-sqlite3 does not export, which an external test
// package cannot reach.
var leftOut = []struct {
	file, decl, reason string
}{
	{"callback_bench_test.go", "", "benchmarks go-sqlite3's handle table (newHandle, lookupHandle, handleVal)"},
	{"callback_test.go", "", "tests go-sqlite3's value converters directly (callbackArg, callbackArgCast, callbackRet, callbackSyntheticForTests)"},
	{"sqlite3_stmt_cache_bench_test.go", "", "benchmarks SQLiteConn.query, unexported"},
	{"sqlite3_context_test.go", "TestRowsInterruptIgnoresInactiveRows", "reads SQLiteConn.mu and calls interruptActiveRows"},
	{"sqlite3_context_test.go", "TestRowsLateInterruptDoesNotAffectReusedStatement", "calls SQLiteConn.interruptActiveRows"},
	{"sqlite3_context_test.go", "TestRowsContextPanicClearsActiveRows", "reads SQLiteConn.mu and activeRows"},
	{"sqlite3_stmt_cache_test.go", "TestStmtCacheLRUEviction", "reads SQLiteConn.stmtCache"},
	{"sqlite3_stmt_cache_test.go", "TestStmtCacheReuseReturnsSameHandle", "calls SQLiteConn.prepareWithCache and reads stmtCacheEnabled"},
	{"sqlite3_stmt_cache_test.go", "cacheKeys", "reads SQLiteConn.stmtCache (helper of the two tests above)"},
	{"sqlite3_stmt_cache_test.go", "cacheCount", "reads SQLiteConn.stmtCache (helper of the two tests above)"},
	{"sqlite3_test.go", "TestBindErrorPaths", "calls SQLiteStmt.bind"},
	{"sqlite3_test.go", "TestAuthorizerHandleRelease", "reads go-sqlite3's handle table (handleVals, handleVal)"},
	{"sqlite3_test.go", "TestConnMethodsAfterClose", "compares errors with errConnClosed"},
}

// slowTests are run only with -full, each with the reason: CI keeps the
// run short.
var slowTests = []struct{ test, reason string }{
	{"TestStress", "10,000 sql.Open/Close cycles of one file: about 2 minutes through cleolease (1 s through go-sqlite3), most of it closing each lease engine's inotify descriptor (about 10 ms in the kernel on Linux)"},
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
