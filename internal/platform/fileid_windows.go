//go:build windows

package platform

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// Stat returns the identity (volume serial number and file index, as
// os.SameFile compares them) and permission bits of the file at path. On
// Windows this opens a handle to the file, which is harmless there: its
// byte-range locks (LockFileEx) belong to a handle, and closing another
// handle drops none of them.
func Stat(path string) (FileInfo, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, 0, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	defer windows.CloseHandle(h)
	id, err := handleID(h)
	if err != nil {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	mode := fs.FileMode(0o666)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return FileInfo{ID: id, Mode: mode}, nil
}

// handleID returns the volume serial number and file index of h.
func handleID(h windows.Handle) (FileID, error) {
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &d); err != nil {
		return FileID{}, err
	}
	return FileID{Dev: uint64(d.VolumeSerialNumber), Ino: uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow)}, nil
}

// OpenFilePinsPath reports whether a path cannot be made to name another
// file while SQLite holds the file open. True on Windows: SQLite's win32
// VFS opens the database without FILE_SHARE_DELETE, and a file open
// without it cannot be deleted, renamed or replaced (DeleteFile,
// MoveFileEx, ReplaceFile fail with a sharing violation or access denied;
// see "Creating and Opening Files",
// https://learn.microsoft.com/windows/win32/fileio/creating-and-opening-files).
const OpenFilePinsPath = true
