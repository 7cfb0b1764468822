package platform

import (
	"bufio"
	"strings"
	"testing"
)

// A faked type table: the classification follows the table it is given,
// not the real one.
func TestClassifyMagicFakeTable(t *testing.T) {
	fake := map[uint32]magicEntry{
		0x1111: {"fakenet", classNetwork},
		0x2222: {"fakefuse", classFUSE},
		0x3333: {"9p", classNetwork},
	}
	cases := []struct {
		magic            uint32
		fuseType, source string
		want             FSInfo
	}{
		{0x1111, "", "", FSInfo{Name: "fakenet", Network: true}},
		{0x2222, "", "", FSInfo{Name: "fakefuse", FUSE: true}},
		{0x2222, "fuse.sshfs", "", FSInfo{Name: "fuse.sshfs", Network: true}},
		{0x2222, "fuse.lxcfs", "", FSInfo{Name: "fuse.lxcfs", FUSE: true}},
		{0x1111, "fuse.sshfs", "", FSInfo{Name: "fakenet", Network: true}}, // mountinfo only consulted for FUSE
		{0x3333, "", "", FSInfo{Name: "9p", Network: true, Note: noteWSL}},
		// LiteFS mounts with type plain "fuse" and source "litefs".
		{0x2222, "fuse", "litefs", FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true}},
		{0x2222, "fuse.litefs", "whatever", FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true}},
		{0x2222, "fuse", "", FSInfo{Name: "fuse", FUSE: true}},
		{0x2222, "fuse.sshfs", "litefs", FSInfo{Name: "fuse.sshfs", Network: true}},
		{0x1111, "fuse", "litefs", FSInfo{Name: "fakenet", Network: true}},
		{0x6969, "", "", FSInfo{}}, // NFS, but not in the fake table: local
		{0xef53, "", "", FSInfo{}},
	}
	for _, c := range cases {
		if got := classifyMagic(fake, c.magic, c.fuseType, c.source); got != c.want {
			t.Errorf("classifyMagic(fake, %#x, %q, %q) = %+v, want %+v", c.magic, c.fuseType, c.source, got, c.want)
		}
	}
}

// The real Linux table: what the issue names is refused, FUSE is warned
// about, common local filesystems pass.
func TestLinuxMagicTable(t *testing.T) {
	network := map[uint32]string{
		0x6969: "nfs", 0x517b: "smb", 0xff534d42: "cifs", 0xfe534d42: "smb2", 0x01021997: "9p",
		0x5346414f: "afs", 0x6b414653: "afs", 0x00c36400: "ceph", 0x0bd00bd0: "lustre",
	}
	for magic, name := range network {
		got := classifyMagic(linuxMagic, magic, "", "")
		if !got.Network || got.FUSE || got.Name != name {
			t.Errorf("%#x: %+v, want network %q", magic, got, name)
		}
	}
	if got := classifyMagic(linuxMagic, 0x01021997, "", ""); !strings.Contains(got.Note, "/mnt/c") {
		t.Errorf("9p note %q does not name WSL2's /mnt/c", got.Note)
	}
	if got := classifyMagic(linuxMagic, 0x65735546, "", ""); !got.FUSE || got.Network {
		t.Errorf("FUSE without a subtype: %+v, want FUSE", got)
	}
	if got := classifyMagic(linuxMagic, 0x65735546, "fuse.glusterfs", ""); !got.Network || got.Name != "fuse.glusterfs" {
		t.Errorf("GlusterFS: %+v, want network", got)
	}
	if got := classifyMagic(linuxMagic, 0x65735546, "virtiofs", ""); !got.FUSE || got.Network {
		t.Errorf("virtiofs: %+v, want FUSE", got)
	}
	// ext4, xfs, btrfs, tmpfs, overlayfs, zfs.
	for _, m := range []uint32{0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630, 0x2fc12fc1} {
		if got := classifyMagic(linuxMagic, m, "", ""); got.Network || got.FUSE {
			t.Errorf("%#x: %+v, want local", m, got)
		}
	}
}

func TestClassifyName(t *testing.T) {
	fake := map[string]fsClass{"netty": classNetwork, "fusey": classFUSE}
	if got := classifyName(fake, "netty"); got != (FSInfo{Name: "netty", Network: true}) {
		t.Errorf("fake network: %+v", got)
	}
	if got := classifyName(fake, "nfs"); got != (FSInfo{Name: "nfs"}) {
		t.Errorf("nfs is not in the fake table: %+v, want local", got)
	}
	for _, n := range []string{"nfs", "smbfs", "afpfs", "webdav", "p9fs"} {
		if got := classifyName(namedTypes, n); !got.Network || got.Name != n {
			t.Errorf("%s: %+v, want network", n, got)
		}
	}
	for _, n := range []string{"macfuse", "osxfuse", "fusefs", "puffs", "fusefs.ntfs-3g"} {
		if got := classifyName(namedTypes, n); !got.FUSE || got.Network {
			t.Errorf("%s: %+v, want FUSE", n, got)
		}
	}
	if got := classifyName(namedTypes, "fusefs.sshfs"); !got.Network {
		t.Errorf("fusefs.sshfs: %+v, want network", got)
	}
	for _, n := range []string{"apfs", "hfs", "ufs", "zfs", "ffs", "tmpfs", "msdos", ""} {
		if got := classifyName(namedTypes, n); got.Network || got.FUSE {
			t.Errorf("%s: %+v, want local", n, got)
		}
	}
}

func TestClassifyUNC(t *testing.T) {
	cases := []struct {
		path    string
		network bool
		name    string
	}{
		{`\\server\share\app\db`, true, `UNC share \\server`},
		{`//server/share/app`, true, `UNC share \\server`},
		{`\\?\UNC\nas\data\x`, true, `UNC share \\nas`},
		{`\\?\unc\nas\data\x`, true, `UNC share \\nas`},
		{`\\wsl$\Ubuntu\home\me`, true, `UNC share \\wsl$ (9p)`},
		{`\\wsl.localhost\Ubuntu\home`, true, `UNC share \\wsl.localhost (9p)`},
		{`\\?\C:\data`, false, ""},
		{`\\.\PhysicalDrive0`, false, ""},
		{`C:\data`, false, ""},
		{`relative\dir`, false, ""},
	}
	for _, c := range cases {
		got, ok := classifyUNC(c.path)
		if ok != c.network || got.Network != c.network || got.Name != c.name {
			t.Errorf("classifyUNC(%q) = %+v, %v; want network=%v name %q", c.path, got, ok, c.network, c.name)
		}
	}
}

func TestParseMountInfo(t *testing.T) {
	const info = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
45 22 0:41 / /mnt/remote rw,nosuid,nodev,relatime shared:30 - fuse.sshfs me@host:/srv rw,user_id=0,group_id=0
46 22 0:42 / /mnt/c rw,noatime - 9p drvfs rw,aname=drvfs;path=C:\
47 22 0:43 / /mnt/odd rw master:2 propagation_from:3 unbindable - fuse.glusterfs gl:/vol rw
44 27 0:44 / /litefs rw,nosuid,nodev,relatime - fuse litefs rw,user_id=0,group_id=0
`
	for _, c := range []struct {
		major, minor uint32
		want, source string
	}{{8, 1, "ext4", "/dev/sda1"}, {0, 41, "fuse.sshfs", "me@host:/srv"}, {0, 42, "9p", "drvfs"}, {0, 43, "fuse.glusterfs", "gl:/vol"}, {0, 44, "fuse", "litefs"}, {0, 99, "", ""}} {
		got, src := parseMountInfo(bufio.NewScanner(strings.NewReader(info)), c.major, c.minor)
		if got != c.want || src != c.source {
			t.Errorf("%d:%d: %q %q, want %q %q", c.major, c.minor, got, src, c.want, c.source)
		}
	}
}

func TestCString(t *testing.T) {
	var b [16]byte
	copy(b[:], "apfs")
	if got := cString(b[:]); got != "apfs" {
		t.Errorf("cString = %q", got)
	}
	if got := cString([]byte("0123456789abcdef")); got != "0123456789abcdef" {
		t.Errorf("cString without NUL = %q", got)
	}
}
