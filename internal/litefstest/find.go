package litefstest

import (
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/cleocode/cleolease/internal/proctest"
)

// Tools are the programs and device a cluster needs, as found on this
// machine.
type Tools struct {
	// LiteFS is the path of the litefs binary.
	LiteFS string
	// Fusermount is the path of fusermount3, which unmounts a node's
	// FUSE mount after its litefs process ended without doing so.
	Fusermount string
}

// Find looks for litefs (on PATH, then in $(go env GOBIN) and $(go env
// GOPATH)/bin), fusermount3 (on PATH) and /dev/fuse. The error names
// everything missing and how to install it.
func Find() (Tools, error) {
	var tools Tools
	var missing []string
	if p, err := findLiteFS(); err == nil {
		tools.LiteFS = p
	} else {
		missing = append(missing, "litefs (go install github.com/superfly/litefs/cmd/litefs@v0.5.14)")
	}
	if p, err := exec.LookPath("fusermount3"); err == nil {
		tools.Fusermount = p
	} else {
		missing = append(missing, "fusermount3 (apt-get install fuse3)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		missing = append(missing, "/dev/fuse ("+err.Error()+")")
	}
	if len(missing) > 0 {
		return tools, errors.New("litefstest: missing " + strings.Join(missing, ", "))
	}
	return tools, nil
}

// findLiteFS returns the path of litefs: on PATH, else where go install
// puts binaries.
func findLiteFS() (string, error) { return proctest.FindInstalled("litefs") }
