package platform

import (
	"strings"
	"testing"
)

// Mailslot names are derived from the file's identity and the holder id
// alone, keep every id apart, and never gain a path component or exceed
// Windows' limits, whatever the id (holder ids are read from the lease
// table, which any process can write).
func TestMailslotName(t *testing.T) {
	f := FileID{Dev: 0xabcd, Ino: 0x1234}
	if got, want := mailslotName(f, "cl-0f3a"), `\\.\mailslot\cleolease\abcd-1234\cl-0f3a`; got != want {
		t.Fatalf("name %q, want %q", got, want)
	}
	if mailslotName(f, "x") == mailslotName(FileID{Dev: 0xabcd, Ino: 0x1235}, "x") {
		t.Fatal("two files share a mailslot name")
	}
	long := strings.Repeat("y", maxMailslotID+1)
	ids := []string{"", "a", "A", "a\\b", "a/b", "a%5Cb", "a b", "é", long, long + "z", strings.Repeat("\\", 40)}
	seen := map[string]string{}
	for _, id := range ids {
		n := mailslotName(f, id)
		if prev, ok := seen[n]; ok {
			t.Fatalf("ids %q and %q share the name %q", prev, id, n)
		}
		seen[n] = id
		rest := strings.TrimPrefix(n, mailslotPrefix)
		if rest == n || strings.Count(rest, `\`) != 1 || strings.ContainsAny(rest, "/:*?\"<>| ") {
			t.Fatalf("id %q: name %q has another component or a reserved character", id, n)
		}
		if len(n) > 200 {
			t.Fatalf("id %q: name %d bytes long", id, len(n))
		}
	}
}
