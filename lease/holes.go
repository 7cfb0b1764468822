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
	// unboundedLateGrant: a claim does not note the epochs it sees in
	// the engine's epoch memory (claimRun.saw), and one that quit after
	// reading another holder's row at epoch F adopts a row naming this
	// process at any epoch this engine has not seen, F or below too
	// (settle.go lateGrant; issue 38 item 1): after a restore, an engine
	// reopened in the same process hands on an epoch the file issued
	// before.
	unboundedLateGrant bool
	// noLeftRowSweep: an engine opened with TablesReady does not sweep a
	// row its process's last engine left at Close (engine.go; issue 38
	// item 2): that row names a process that holds its liveness lock and
	// does not listen, and every waiter waits its whole Wait bound.
	noLeftRowSweep bool
	// ignoreRefusal: a waiter does not take a live holder's refused
	// registration for a row that holder does not hold (reclaimable;
	// issue 38 item 2): a row a restore brought back, naming a live
	// process whose engine does not listen, stalls every waiter.
	ignoreRefusal bool
	// dropCommitRead: the fencing check before COMMIT trusts the one
	// right after BEGIN IMMEDIATE in the same open transaction (hold.go;
	// the experiment of issue 24 item 3, see docs/BENCHMARKS.md).
	dropCommitRead bool
}
