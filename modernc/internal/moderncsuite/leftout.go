package main

import "github.com/cleocode/cleolease/internal/suiterun"

// leftOut lists what of modernc's test files is not copied: whole files
// (no Decl) or top-level declarations, each with the reason — that it
// uses a name modernc does not export (an unexported type, function or
// field: modernc's internals, which an external test package cannot reach
// and which test modernc rather than the database/sql behaviour cleolease
// must keep), or that it tests modernc's source tree rather than a driver.
var leftOut = []suiterun.LeftOut{
	{File: "all_test.go", Decl: "TestBeginMode", Reason: "asserts on *conn (unexported) through sql.Conn.Raw"},
	{File: "all_test.go", Decl: "TestInMemoryDBSurvivesContextCancel", Reason: "asserts on *conn (unexported) through sql.Conn.Raw"},
	{File: "authorizer_test.go", Decl: "TestAuthorizerCloseCleanup", Reason: "calls newConn and reads xAuthorizers and authorizerTrampoline (unexported)"},
	{File: "backup_test.go", Reason: "opens modernc's connections with newConn and runs statements on *conn and *stmt (unexported)"},
	{File: "bind_test.go", Decl: "TestArgFinder", Reason: "calls newArgFinder and scanArgs (unexported)"},
	{File: "cancellation_test.go", Reason: "calls newConn, newStmt and interruptOnDone and reads cancellationFlags (unexported)"},
	{File: "conn_test.go", Decl: "TestHooksCloseCleanup", Reason: "calls newConn and reads the xCommitHandlers, xRollbackHandlers and xPreUpdateHandlers tables (unexported)"},
	{File: "connector_test.go", Decl: "TestConnectorWrapping", Reason: "not a test of modernc's internals, but flaky through cleolease: the cleolease Connector it wraps is never closed (the wrapper hides Close), and t.TempDir's cleanup passes or fails by whether the lease engine's files are gone yet (README, modernc table: a Connector never closed)"},
	{File: "connector_test.go", Decl: "TestConnectorDSNSplitMatchesOpen", Reason: "reads the package driver d and calls dsnQuery (unexported)"},
	{File: "defensive_test.go", Decl: "TestDefensiveConfigCallVaList", Reason: "calls newConn (unexported)"},
	{File: "dqs_test.go", Decl: "TestDQSConfigCallVaList", Reason: "calls newConn (unexported)"},
	{File: "dqs_test.go", Decl: "TestDQSInvalid", Reason: "calls newConn (unexported)"},
	{File: "driver_register_test.go", Decl: "TestDriverRegisterIsolation", Reason: "reads Driver's udfs and modules (unexported)"},
	{File: "driver_register_test.go", Decl: "TestDriverRegisterConcurrent", Reason: "reads Driver's udfs, collations, modules and connectionHooks (unexported)"},
	{File: "driver_register_test.go", Decl: "TestDriverGlobalModulesStillApply", Reason: "reads Driver's mu and modules (unexported)"},
	{File: "driver_register_test.go", Decl: "TestVtabRegisterModuleHonoursDB", Reason: "reads Driver's modules (unexported)"},
	{File: "error_rc_test.go", Decl: "TestErrstrForDBSuppressOnMismatch", Reason: "calls newConn and errstrForDB (unexported)"},
	{File: "error_rc_test.go", Decl: "TestErrorRcInvalidValue", Reason: "calls newConn (unexported)"},
	{File: "func_ctx_pool_test.go", Reason: "reads FunctionContext's tls and ctx and *conn's tls (unexported)"},
	{File: "func_ctx_test.go", Reason: "reads FunctionContext's tls and ctx (unexported)"},
	{File: "func_test.go", Decl: "TestRegisteredFunctions", Reason: "calls newConn (unexported)"},
	{File: "pagecache_pin_test.go", Reason: "drives the page-cache trampolines and pcacheBinding (unexported)"},
	{File: "pagecache_test.go", Decl: "TestPCacheMethods2Layout", Reason: "reads pcacheMethods2 (unexported)"},
	{File: "pagecache_test.go", Decl: "TestRegisterPageCacheLifecycle", Reason: "reads pcacheState (unexported)"},
	{File: "pagecache_test.go", Decl: "TestOpenGateConcurrentReaders", Reason: "calls withOpenGate and reads pcacheState (unexported)"},
	{File: "pagecache_test.go", Decl: "TestPCacheIDGen", Reason: "reads pcacheIDGen (unexported)"},
	{File: "reprepare_test.go", Reason: "runs *stmt (unexported) on *conn and counts its re-preparations"},
	{File: "sharedcache_test.go", Decl: "driverConn", Reason: "returns *conn (unexported); helper of the shared-cache wait tests"},
	{File: "sharedcache_test.go", Decl: "awaitSharedCacheWait", Reason: "reads *conn (unexported); helper of the shared-cache wait tests"},
	{File: "sharedcache_test.go", Decl: "TestSharedCacheBeginTxWaits", Reason: "watches *conn's shared-cache wait (driverConn, awaitSharedCacheWait)"},
	{File: "sharedcache_test.go", Decl: "TestSharedCacheWaitEndsWithContext", Reason: "watches *conn's shared-cache wait (driverConn, awaitSharedCacheWait)"},
	{File: "sharedcache_test.go", Decl: "TestSharedCacheWaitAfterContextDone", Reason: "calls newStmt (unexported) on *conn"},
	{File: "sharedcache_test.go", Decl: "TestSharedCacheWaitContextRestored", Reason: "calls interruptOnDone (unexported) on *conn"},
	{File: "sharedcache_test.go", Decl: "TestSharedCacheWaitThenLateCancel", Reason: "watches *conn's shared-cache wait (driverConn, awaitSharedCacheWait)"},
	{File: "sharedcache_test.go", Decl: "TestSharedCacheTxEndWaitsForSchemaLock", Reason: "watches *conn's shared-cache wait (driverConn, awaitSharedCacheWait)"},
	{File: "sharedcache_test.go", Decl: "TestMutexWakeOnce", Reason: "tests modernc's mutex (mutexAlloc, mutexFree; unexported)"},
	{File: "strictpragma_test.go", Decl: "TestSingleStatement", Reason: "calls singleStatement (unexported)"},
	{File: "strictpragma_test.go", Decl: "sqliteTailIsEmpty", Reason: "prepares on *conn (unexported)"},
	{File: "strictpragma_test.go", Decl: "TestSingleStatementAgainstSQLite", Reason: "calls newConn and singleStatement (unexported)"},
	{File: "strictpragma_test.go", Decl: "FuzzSingleStatement", Reason: "calls newConn and singleStatement (unexported)"},
	{File: "seh_test.go", Decl: "TestSEHInjectedFault", Reason: "counts SQLite's fault-injection sites (lib's SehInject, process-wide) a statement reaches: the lease engine's own statements in the process reach them too, so a fault meant for the statement lands elsewhere"},
	{File: "time_roundtrip_test.go", Decl: "TestTimeStringFormats", Reason: "calls *conn's formatTime and reads writeTimeFormats (unexported)"},
	{File: "vendorstamp_test.go", Reason: "checks modernc's source tree against vendor.json (imports modernc.org/sqlite/internal/vendorstamp)"},
}

// slowTests are run only with -full, each with the reason: CI keeps the
// run short.
var slowTests = []struct{ test, reason string }{
	{"TestIssue118", "10,000 sql.Open/Close cycles of a private database, each a new file through cleolease (suiteDSN), each opening and closing a lease engine"},
	{"TestIssue51", "runs for one minute by design (through modernc too)"},
	{"TestTxCommitBusyFix", "a known failure (BeginTx) that takes a minute: the second *sql.DB's BeginTx waits 30 s for the lease the first holds, then SQLite's 30 s busy_timeout"},
}

// bugs are the failing tests, by full name, that show a cleolease bug
// rather than a README difference: not listed in known_failures.txt (a bug
// is not a difference to keep), and their top-level test is in slowTests,
// so the default run stays green while -full shows them failing.
var bugs = []struct{ test, report string }{
	// None now. TestBusyTimeoutWaitEndsWithContext's ExecContext and
	// QueryContext were here until the driver's own BEGIN IMMEDIATE waited
	// with the caller's context (internal/core's leaseConn.beginImmediate).
}
