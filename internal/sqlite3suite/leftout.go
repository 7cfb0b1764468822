package main

import "github.com/cleocode/cleolease/internal/suiterun"

// leftOut lists what of go-sqlite3's test files is not copied: whole files
// (no Decl) or top-level declarations, each with the reason — always
// that it uses a name go-sqlite3 does not export, which an external test
// package cannot reach.
var leftOut = []suiterun.LeftOut{
	{File: "callback_bench_test.go", Reason: "benchmarks go-sqlite3's handle table (newHandle, lookupHandle, handleVal)"},
	{File: "callback_test.go", Reason: "tests go-sqlite3's value converters directly (callbackArg, callbackArgCast, callbackRet, callbackSyntheticForTests)"},
	{File: "sqlite3_stmt_cache_bench_test.go", Reason: "benchmarks SQLiteConn.query, unexported"},
	{File: "sqlite3_context_test.go", Decl: "TestRowsInterruptIgnoresInactiveRows", Reason: "reads SQLiteConn.mu and calls interruptActiveRows"},
	{File: "sqlite3_context_test.go", Decl: "TestRowsLateInterruptDoesNotAffectReusedStatement", Reason: "calls SQLiteConn.interruptActiveRows"},
	{File: "sqlite3_context_test.go", Decl: "TestRowsContextPanicClearsActiveRows", Reason: "reads SQLiteConn.mu and activeRows"},
	{File: "sqlite3_stmt_cache_test.go", Decl: "TestStmtCacheLRUEviction", Reason: "reads SQLiteConn.stmtCache"},
	{File: "sqlite3_stmt_cache_test.go", Decl: "TestStmtCacheReuseReturnsSameHandle", Reason: "calls SQLiteConn.prepareWithCache and reads stmtCacheEnabled"},
	{File: "sqlite3_stmt_cache_test.go", Decl: "cacheKeys", Reason: "reads SQLiteConn.stmtCache (helper of the two tests above)"},
	{File: "sqlite3_stmt_cache_test.go", Decl: "cacheCount", Reason: "reads SQLiteConn.stmtCache (helper of the two tests above)"},
	{File: "sqlite3_test.go", Decl: "TestBindErrorPaths", Reason: "calls SQLiteStmt.bind"},
	{File: "sqlite3_test.go", Decl: "TestAuthorizerHandleRelease", Reason: "reads go-sqlite3's handle table (handleVals, handleVal)"},
	{File: "sqlite3_test.go", Decl: "TestConnMethodsAfterClose", Reason: "compares errors with errConnClosed"},
}

// slowTests are run only with -full, each with the reason: CI keeps the
// run short.
var slowTests = []struct{ test, reason string }{
	{"TestStress", "10,000 sql.Open/Close cycles of one file: about 15 s through cleolease on a 2-vCPU VM (2026-12-06; a process that only reads opens no lease connection, socket or file watch), a few seconds through go-sqlite3"},
}
