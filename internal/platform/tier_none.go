//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package platform

import "io/fs"

// tierNeeded: one tier only on this platform.
const tierNeeded = false

// tierJoin has nothing to do where the portable tier is the only one.
func tierJoin(dbPath string, mode fs.FileMode) (leave func(), err error) { return nil, nil }
