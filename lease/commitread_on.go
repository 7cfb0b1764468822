//go:build !cleolease_nocommitread

package lease

// dropCommitRead is false in every real build. The build tag
// cleolease_nocommitread sets it (commitread_off.go): the fencing check
// before COMMIT then trusts the check right after BEGIN IMMEDIATE in the
// same open transaction without reading the row again — the change issue
// 24 item 3 asks about, built only to run the simulation and the chaos
// ledger on it.
const dropCommitRead = false
