package sqlbase

import "testing"

// Coexists, for every pair of kinds: the same kind, and POSIX record locks
// with OFD locks (either way round); nothing else, unknown kinds
// included; no locks coexist with nothing, themselves included.
func TestLockingCoexists(t *testing.T) {
	kinds := []Locking{LockingPOSIX, LockingOFD, LockingFlock, LockingDotlk, LockingWin32, LockingNone, "vfs-of-the-future"}
	coexist := map[[2]Locking]bool{
		{LockingPOSIX, LockingOFD}: true,
		{LockingOFD, LockingPOSIX}: true,
	}
	for _, a := range kinds {
		for _, b := range kinds {
			want := (a == b || coexist[[2]Locking{a, b}]) && a != LockingNone && b != LockingNone
			if got := a.Coexists(b); got != want {
				t.Errorf("%s.Coexists(%s) = %v, want %v", a, b, got, want)
			}
		}
	}
	for _, c := range []struct {
		a, b Locking
		want bool
	}{
		{LockingPOSIX, LockingPOSIX, true},
		{LockingPOSIX, LockingOFD, true},
		{LockingOFD, LockingPOSIX, true},
		{LockingPOSIX, LockingFlock, false},
		{LockingFlock, LockingPOSIX, false},
		{LockingOFD, LockingFlock, false},
		{LockingPOSIX, LockingDotlk, false},
		{LockingFlock, LockingDotlk, false},
		{LockingDotlk, LockingDotlk, true},
		{LockingFlock, LockingFlock, true},
		{LockingWin32, LockingWin32, true},
		{LockingWin32, LockingPOSIX, false},
		{LockingNone, LockingNone, false},
		{LockingNone, LockingPOSIX, false},
	} {
		if got := c.a.Coexists(c.b); got != c.want {
			t.Errorf("table: %s.Coexists(%s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// Describe names the kind and the bases that take it.
func TestLockingDescribe(t *testing.T) {
	for k, want := range map[Locking]string{
		LockingPOSIX: "posix (fcntl record locks: go-sqlite3, modernc)",
		LockingFlock: "flock (flock(2): ncruces built with sqlite3_flock, or on the BSDs and illumos)",
		"x":          `"x" (an unknown kind)`,
	} {
		if got := k.Describe(); got != want {
			t.Errorf("%s.Describe() = %q, want %q", k, got, want)
		}
	}
}
