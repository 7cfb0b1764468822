//go:build race

package compat_test

// raceEnabled: this test binary was built with -race, so the snippets are
// built with it too, from the same build cache (a fresh clone compiles
// SQLite's C code once, not twice).
const raceEnabled = true
