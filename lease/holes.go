package lease

// holes are the protocol's holes a test puts back, and issue 24 item 3's
// experiment. Every field is false in every engine a program opens
// (realSeams); only the package's tests set one, in the osSeams an engine
// is opened with (the simulation's TestSimulationFinds*Bug), to show that
// the simulation finds the hole when its fix is reverted.
type holes struct {
	// skipFence: every fencing read passes without reading the row
	// (hold.go): a broken or robbed holder commits at its old epoch.
	skipFence bool
	// forgetLateGrant: a claim that quit without finding its grant starts
	// no settle, and the check forgets a late grant (claim.go, settle.go;
	// issue 28 item 1): a live process holds the lane without knowing.
	forgetLateGrant bool
	// unknownIsDead: a holder of another pid namespace whose liveness lock
	// cannot be tested is judged dead (probe; issue 28 item 3): a live
	// holder is robbed.
	unknownIsDead bool
	// ignoreSidecarMove: engines never follow replaced liveness files
	// (sidecarfollow.go; issue 28 item 2): a waiter that opened after the
	// sidecar was removed starves.
	ignoreSidecarMove bool
	// dropCommitRead: the fencing check before COMMIT trusts the one
	// right after BEGIN IMMEDIATE in the same open transaction (hold.go;
	// the experiment of issue 24 item 3, see docs/BENCHMARKS.md).
	dropCommitRead bool
}
