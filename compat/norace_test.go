//go:build !race

package compat_test

// raceEnabled: this test binary was built without -race (see race_test.go).
const raceEnabled = false
