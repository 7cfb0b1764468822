//go:build cleolease_simbug

package lease

// seededBugSkipFence, under the build tag cleolease_simbug only, makes
// every fencing read pass without reading the row: the bug the
// simulation must find (sim_bug_test.go). Never set in a real build.
const seededBugSkipFence = true
