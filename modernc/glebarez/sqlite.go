// Package sqlite stands in for github.com/glebarez/go-sqlite, the fork of
// modernc.org/sqlite's driver that GORM's pure-Go dialector
// github.com/glebarez/sqlite imports, so that a program on that dialector
// can use cleolease-modernc: a program that links the fork and
// modernc.org/sqlite (which cleolease-modernc links) panics at start,
// "sql: Register called twice for driver sqlite", because both register
// the driver name "sqlite".
//
// It is the fork's API over modernc.org/sqlite: Error is modernc's error
// (so the dialector's Translate recognises the errors cleolease-modernc
// returns), Driver is modernc's driver, the function registrations are
// modernc's, and the driver name "sqlite" is registered once, by
// modernc.org/sqlite. A program takes it with one line of its go.mod
// (see cleolease's README, "GORM's pure-Go dialector"):
//
//	replace github.com/glebarez/go-sqlite => github.com/cleocode/cleolease/modernc/glebarez <version>
//
// and opens GORM through cleolease-modernc:
//
//	gorm.Open(sqlite.Dialector{DriverName: "cleolease-modernc", DSN: "file:app.db"}, &gorm.Config{})
//
// One difference from the fork: LogSqlStatements has no effect (modernc.org/sqlite
// has no statement log; use cleolease's Config.Logger or a tracing driver).
// cleolease's modernc/internal/glebareztest, a module with that replace
// line, runs the second block.
//
//snippet:nocompile replace
//snippet:nocompile gorm.Open
package sqlite

import (
	"database/sql/driver"

	msqlite "modernc.org/sqlite"
)

// Driver is modernc.org/sqlite's driver (the fork's Driver, its origin).
type Driver = msqlite.Driver

// Error is modernc.org/sqlite's error: Code() is SQLite's extended result
// code (modernc.org/sqlite/lib's SQLITE_* constants).
type Error = msqlite.Error

// FunctionContext is the context a registered function is called with.
type FunctionContext = msqlite.FunctionContext

// ErrorCodeString maps SQLite's result codes to their names.
var ErrorCodeString = msqlite.ErrorCodeString

// LogSqlStatements is the fork's switch for logging every statement to
// standard output. It has no effect here: modernc.org/sqlite has no
// statement log.
var LogSqlStatements bool

// RegisterScalarFunction registers a scalar function named zFuncName with
// nArg arguments (-1: variadic) for connections opened afterwards.
func RegisterScalarFunction(zFuncName string, nArg int32, xFunc func(ctx *FunctionContext, args []driver.Value) (driver.Value, error)) error {
	return msqlite.RegisterScalarFunction(zFuncName, nArg, xFunc)
}

// MustRegisterScalarFunction is RegisterScalarFunction, panicking on error.
func MustRegisterScalarFunction(zFuncName string, nArg int32, xFunc func(ctx *FunctionContext, args []driver.Value) (driver.Value, error)) {
	msqlite.MustRegisterScalarFunction(zFuncName, nArg, xFunc)
}

// RegisterDeterministicScalarFunction registers a deterministic scalar
// function (SQLite may factor its calls out of loops) named zFuncName with
// nArg arguments (-1: variadic) for connections opened afterwards.
func RegisterDeterministicScalarFunction(zFuncName string, nArg int32, xFunc func(ctx *FunctionContext, args []driver.Value) (driver.Value, error)) error {
	return msqlite.RegisterDeterministicScalarFunction(zFuncName, nArg, xFunc)
}

// MustRegisterDeterministicScalarFunction is
// RegisterDeterministicScalarFunction, panicking on error.
func MustRegisterDeterministicScalarFunction(zFuncName string, nArg int32, xFunc func(ctx *FunctionContext, args []driver.Value) (driver.Value, error)) {
	msqlite.MustRegisterDeterministicScalarFunction(zFuncName, nArg, xFunc)
}
