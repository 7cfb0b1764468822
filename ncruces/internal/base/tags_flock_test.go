//go:build sqlite3_flock && !sqlite3_dotlk

package base_test

// buildTag is the build tag that chose ncruces's VFS locks in this test
// binary.
const buildTag = "sqlite3_flock"
