//go:build windows

package platform

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// FileSystem reports the filesystem holding dir, a directory (pass the
// directory of the database, which may not exist yet). A UNC path
// (\\server\share\…, also \\?\UNC\server\share\…) is a network share; for
// any other path the volume's root (GetVolumePathNameW) is asked for its
// drive type (GetDriveTypeW: DRIVE_REMOTE is a mapped network drive) and
// its filesystem name (GetVolumeInformationW, for the message). It opens
// nothing under dir. Errors: GetVolumePathNameW's, wrapped with dir.
func FileSystem(dir string) (FSInfo, error) {
	if info, ok := classifyUNC(dir); ok {
		return info, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return FSInfo{}, err
	}
	if info, ok := classifyUNC(abs); ok {
		return info, nil
	}
	p, err := windows.UTF16PtrFromString(abs)
	if err != nil {
		return FSInfo{}, fmt.Errorf("%s: %w", dir, err)
	}
	root := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumePathName(p, &root[0], uint32(len(root))); err != nil {
		return FSInfo{}, fmt.Errorf("GetVolumePathName %s: %w", dir, err)
	}
	name := volumeFSName(&root[0])
	if windows.GetDriveType(&root[0]) == windows.DRIVE_REMOTE {
		if name == "" {
			name = "remote drive"
		} else {
			name = "remote drive (" + name + ")"
		}
		return FSInfo{Name: name, Network: true}, nil
	}
	return FSInfo{Name: name}, nil
}

// volumeFSName returns the filesystem name of the volume whose root is
// root ("NTFS", "ReFS", …), or "" when Windows does not say.
func volumeFSName(root *uint16) string {
	buf := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumeInformation(root, nil, 0, nil, nil, nil, &buf[0], uint32(len(buf))); err != nil {
		return ""
	}
	return windows.UTF16ToString(buf)
}
