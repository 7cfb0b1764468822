package platform

// Filesystem type detection: FileSystem (per OS in fstype_*.go) tells a
// network or FUSE filesystem, whose locks cannot keep two hosts apart.

import (
	"bufio"
	"strconv"
	"strings"
)

// FSInfo describes the filesystem that holds a directory, as FileSystem
// reports it.
type FSInfo struct {
	// Name is the filesystem's type as the OS names it: a Linux type from
	// the statfs f_type table below (for FUSE, "fuse.<subtype>" from
	// /proc/self/mountinfo when known, or, for a mount of plain type
	// "fuse", "fuse.<source>" with its source, the FUSE filesystem name:
	// "fuse.litefs" for LiteFS), the BSDs' and macOS's f_fstypename,
	// Windows' volume filesystem name (or "UNC" / "remote drive"). Empty
	// when the type is not in the tables.
	Name string
	// Network reports a filesystem shared over a network or with another
	// kernel (NFS, SMB/CIFS, 9p, AFS, Ceph, Lustre, GlusterFS, cluster
	// filesystems, a Windows remote drive or UNC path). SQLite's locks are
	// unreliable there (sqlite.org/howtocorrupt.html §2.1) and cleolease's
	// liveness evidence is local to one host.
	Network bool
	// FUSE reports a filesystem in user space whose type does not tell
	// whether it is local or remote; its locking is whatever its daemon
	// implements.
	FUSE bool
	// LiteFS reports a LiteFS mount (github.com/superfly/litefs), which
	// mounts with the FUSE filesystem name "litefs": on Linux the mount's
	// type is "fuse" and its source "litefs" in /proc/self/mountinfo. It
	// keeps only SQLite's own files and implements locks only on SQLite's
	// lock bytes. FUSE is true too.
	LiteFS bool
	// Note, when not empty, is a hint for a person reading an error or a
	// log line about this filesystem (for example that WSL2 mounts Windows
	// drives such as /mnt/c over 9p).
	Note string
}

// FileSystem exists on every GOOS (fstype_linux.go, fstype_bsd.go,
// fstype_windows.go, fstype_other.go): a GOOS without one fails to compile
// here rather than in a caller that go vet does not reach.
var _ func(dir string) (FSInfo, error) = FileSystem

// fsClass is what cleolease makes of a filesystem type.
type fsClass uint8

const (
	classLocal fsClass = iota
	classNetwork
	classFUSE
)

// magicEntry is one row of a Linux statfs f_type table.
type magicEntry struct {
	name  string
	class fsClass
}

// noteWSL explains 9p, the transport WSL2 mounts Windows drives with.
const noteWSL = "WSL2 mounts Windows drives (/mnt/c, /mnt/d, …) over 9p; keep the database in the Linux filesystem (for example under your home directory)"

// linuxMagic maps the Linux statfs(2) f_type of the filesystems cleolease
// treats specially to their name and class. Sources: linux/magic.h (also
// golang.org/x/sys/unix's *_MAGIC constants) and GNU coreutils'
// src/stat.c, whose human_fstype marks each type "local" or "remote"; every
// type listed here as network is "remote" there, except 9p, which
// coreutils calls local (virtio-9p between a VM and its host) and which
// cleolease refuses because WSL2 mounts Windows drives with it. Types not
// listed are local. GlusterFS, sshfs and ceph-fuse are FUSE mounts: see
// fuseNetwork.
var linuxMagic = map[uint32]magicEntry{
	0x6969:     {"nfs", classNetwork},    // NFS_SUPER_MAGIC
	0x517b:     {"smb", classNetwork},    // SMB_SUPER_MAGIC
	0xff534d42: {"cifs", classNetwork},   // CIFS_SUPER_MAGIC
	0xfe534d42: {"smb2", classNetwork},   // SMB2_SUPER_MAGIC
	0x01021997: {"9p", classNetwork},     // V9FS_MAGIC
	0x5346414f: {"afs", classNetwork},    // AFS_SUPER_MAGIC (OpenAFS)
	0x6b414653: {"afs", classNetwork},    // AFS_FS_MAGIC (kAFS)
	0x73757245: {"coda", classNetwork},   // CODA_SUPER_MAGIC
	0x564c:     {"ncpfs", classNetwork},  // NCP_SUPER_MAGIC (Novell)
	0x00c36400: {"ceph", classNetwork},   // CEPH_SUPER_MAGIC
	0x0bd00bd0: {"lustre", classNetwork}, // coreutils S_MAGIC_LUSTRE
	0x19830326: {"beegfs", classNetwork}, // coreutils S_MAGIC_FHGFS
	0x47504653: {"gpfs", classNetwork},   // coreutils S_MAGIC_GPFS
	0xaad7aaea: {"panfs", classNetwork},  // coreutils S_MAGIC_PANFS
	0x013111a8: {"ibrix", classNetwork},  // coreutils S_MAGIC_IBRIX
	0xbeefdead: {"snfs", classNetwork},   // coreutils S_MAGIC_SNFS (StorNext)
	0x7461636f: {"ocfs2", classNetwork},  // OCFS2_SUPER_MAGIC (shared-disk cluster)
	0x01161970: {"gfs2", classNetwork},   // coreutils S_MAGIC_GFS (shared-disk cluster)
	0x61636673: {"acfs", classNetwork},   // coreutils S_MAGIC_ACFS (Oracle cluster)
	0x786f4256: {"vboxsf", classNetwork}, // coreutils S_MAGIC_VBOXSF (VirtualBox shared folder)
	0xbacbacbc: {"vmhgfs", classNetwork}, // coreutils S_MAGIC_VMHGFS (VMware shared folder)
	0x7c7c6673: {"prl_fs", classNetwork}, // coreutils S_MAGIC_PRL_FS (Parallels shared folder)
	0x65735546: {"fuse", classFUSE},      // FUSE_SUPER_MAGIC
}

// fuseNetwork lists FUSE subtypes (the part after "fuse." in the
// filesystem type of /proc/self/mountinfo, or after "fusefs." on FreeBSD)
// that reach another machine. Any other FUSE mount is only warned about.
var fuseNetwork = map[string]bool{
	"glusterfs": true,
	"sshfs":     true,
	"ceph-fuse": true,
	"s3fs":      true,
	"gcsfuse":   true,
	"rclone":    true,
	"juicefs":   true,
	"davfs":     true,
	"smbnetfs":  true,
	"curlftpfs": true,
	"lizardfs":  true,
	"moosefs":   true,
	"beegfs":    true,
}

// namedTypes maps the f_fstypename that macOS and the BSDs report
// (statfs(2) on macOS and FreeBSD, statvfs(5) on NetBSD) to a class. Names
// not listed are local; see classifyName for FUSE names.
var namedTypes = map[string]fsClass{
	"nfs":    classNetwork,
	"nfs4":   classNetwork,
	"oldnfs": classNetwork,
	"smbfs":  classNetwork,
	"cifs":   classNetwork,
	"afpfs":  classNetwork,
	"webdav": classNetwork,
	"ftp":    classNetwork,
	"afs":    classNetwork,
	"coda":   classNetwork,
	"p9fs":   classNetwork, // FreeBSD's 9p client
	"9p":     classNetwork,
	"fuse":   classFUSE,
	"fusefs": classFUSE,
	// macFUSE (formerly OSXFUSE) names its mounts after itself.
	"macfuse": classFUSE,
	"osxfuse": classFUSE,
	// NetBSD's userspace filesystems (perfuse runs FUSE daemons on it).
	"puffs":   classFUSE,
	"perfuse": classFUSE,
}

// classifyMagic turns a Linux statfs f_type into an FSInfo using table;
// fuseType and source are the mount's type ("fuse.sshfs", or plain
// "fuse") and source (for FUSE, its filesystem name: "litefs") from
// /proc/self/mountinfo, or "" when unknown, and are consulted only for
// FUSE. A plain "fuse" type is named after its source.
func classifyMagic(table map[uint32]magicEntry, magic uint32, fuseType, source string) FSInfo {
	e, ok := table[magic]
	if !ok {
		return FSInfo{}
	}
	info := fromClass(e.name, e.class)
	if e.name == "9p" {
		info.Note = noteWSL
	}
	if e.class == classFUSE && fuseType == "fuse" && source != "" {
		fuseType = "fuse." + source
	}
	if e.class == classFUSE && fuseType != "" {
		info = classifyFUSE(fuseType)
	}
	return info
}

// classifyName turns a BSD or macOS f_fstypename into an FSInfo using
// table. A name "fuse.<subtype>" or "fusefs.<subtype>" is FUSE, and
// network when the subtype is in fuseNetwork.
func classifyName(table map[string]fsClass, name string) FSInfo {
	if c, ok := table[name]; ok {
		return fromClass(name, c)
	}
	if strings.HasPrefix(name, "fuse.") || strings.HasPrefix(name, "fusefs.") {
		return classifyFUSE(name)
	}
	return FSInfo{Name: name}
}

// classifyFUSE classifies a FUSE mount by its full type ("fuse.sshfs").
func classifyFUSE(fullType string) FSInfo {
	_, sub, _ := strings.Cut(fullType, ".")
	if fuseNetwork[sub] {
		return FSInfo{Name: fullType, Network: true}
	}
	return FSInfo{Name: fullType, FUSE: true, LiteFS: sub == "litefs"}
}

func fromClass(name string, c fsClass) FSInfo {
	return FSInfo{Name: name, Network: c == classNetwork, FUSE: c == classFUSE}
}

// cString returns the bytes of b up to its first NUL (a C char array).
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// classifyUNC recognises a UNC path: a share on another machine, or WSL2's
// own filesystem shared with Windows (\\wsl$\…, \\wsl.localhost\…, served
// over 9p). Local device paths (\\?\C:\…, \\.\…) are not UNC.
func classifyUNC(p string) (FSInfo, bool) {
	p = strings.ReplaceAll(p, "/", `\`)
	switch {
	case hasPrefixFold(p, `\\?\UNC\`):
		p = `\\` + p[len(`\\?\UNC\`):]
	case strings.HasPrefix(p, `\\?\`), strings.HasPrefix(p, `\\.\`):
		return FSInfo{}, false
	case !strings.HasPrefix(p, `\\`):
		return FSInfo{}, false
	}
	host, _, _ := strings.Cut(p[2:], `\`)
	if strings.EqualFold(host, "wsl$") || strings.EqualFold(host, "wsl.localhost") {
		return FSInfo{Name: "UNC share " + `\\` + host + " (9p)", Network: true,
			Note: "Windows reaches WSL2's filesystem over 9p; open the database from inside WSL2, or keep it on a Windows drive"}, true
	}
	return FSInfo{Name: "UNC share " + `\\` + host, Network: true}, true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// parseMountInfo scans mountinfo lines for the first mount of device
// major:minor and returns its filesystem type and source: the first and
// second fields after the " - " separator (the optional fields before it
// vary in number).
func parseMountInfo(sc *bufio.Scanner, major, minor uint32) (fsType, source string) {
	want := strconv.FormatUint(uint64(major), 10) + ":" + strconv.FormatUint(uint64(minor), 10)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != want {
			continue
		}
		for i := 3; i+1 < len(fields); i++ {
			if fields[i] == "-" {
				if i+2 < len(fields) {
					return fields[i+1], fields[i+2]
				}
				return fields[i+1], ""
			}
		}
	}
	return "", ""
}
