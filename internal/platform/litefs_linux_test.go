//go:build linux

package platform

import (
	"errors"
	"testing"

	"github.com/cleocode/cleolease/internal/litefstest"
)

// On a real LiteFS mount FileSystem reports LiteFS (type "fuse", source
// "litefs"), and OpenLocks never keeps liveness locks there: the default
// tier refuses with ErrLocksIgnored (LiteFS lets it create the sidecar,
// but its locks outside SQLite's lock bytes are not seen from another
// open file); the portable tier cannot create its files there and falls
// back to pid and start time.
func TestLiteFSMount(t *testing.T) {
	c := litefstest.Start(t)
	info, err := FileSystem(c.Primary.Mount)
	if err != nil {
		t.Fatal(err)
	}
	if !info.LiteFS || !info.FUSE || info.Network || info.Name != "fuse.litefs" {
		t.Errorf("FileSystem(%s) = %+v, want LiteFS (fuse.litefs)", c.Primary.Mount, info)
	}
	l, err := OpenLocks(c.Primary.Path("app.db"), 0o644, SlotFor("a"))
	if l != nil {
		l.Close()
		t.Fatalf("OpenLocks in a LiteFS mount kept locks whose conflicts nobody sees (err %v)", err)
	}
	if !Portable && !errors.Is(err, ErrLocksIgnored) {
		t.Fatalf("OpenLocks in a LiteFS mount: %v; want ErrLocksIgnored", err)
	}
}
