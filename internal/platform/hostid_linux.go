//go:build linux

package platform

import "sync/atomic"

// testBootID, when set, is what BootID reports instead of the kernel's
// boot id.
var testBootID atomic.Pointer[string]

// SetTestBootID makes BootID report id for the rest of this process's
// life, so that a test can run two "hosts" on one kernel: the nodes of a
// LiteFS cluster started on 127.0.0.1 (internal/litefstest), each of whose
// processes must take the rows the other node's processes wrote for
// another host's, as separate machines would. An empty id is refused
// (panic): it would match no holder_start layout.
//
// For tests only. The package is internal, so no program outside this
// module can call it, and TestSetTestBootIDOnlyInTests checks that no
// non-test file of the module does; a test's child process calls it from
// its role (the variable that carries the id to it is read by test code
// only).
func SetTestBootID(id string) {
	if id == "" {
		panic("platform: SetTestBootID: empty id")
	}
	testBootID.Store(&id)
}
