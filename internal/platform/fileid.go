package platform

import "io/fs"

// FileID is a file's identity: device and inode on Unix, volume serial
// number and file index on Windows (what os.SameFile compares).
type FileID struct {
	Dev, Ino uint64
}

// FileInfo is what Stat reports about a path: its identity and permission
// bits.
type FileInfo struct {
	ID   FileID
	Mode fs.FileMode
}
