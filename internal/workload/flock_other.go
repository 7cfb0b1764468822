//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package workload

import "errors"

// haveFlock: this platform has no flock(2) (the Flock peer does not run).
const haveFlock = false

// flockFile is the Flock peer's side file; this platform has no flock(2).
type flockFile struct{}

func openFlock(string) (*flockFile, error) {
	return nil, errors.New("the flock peer needs flock(2), which this platform lacks")
}

func (*flockFile) lock() error   { return nil }
func (*flockFile) unlock() error { return nil }
func (*flockFile) close() error  { return nil }
