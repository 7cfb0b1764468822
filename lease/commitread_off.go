//go:build cleolease_nocommitread

package lease

// dropCommitRead, under the build tag cleolease_nocommitread only, skips
// the fencing read before COMMIT when FenceBegin found the row in the same
// open transaction (issue 24 item 3's experiment; see commitread_on.go).
const dropCommitRead = true
