//go:build unix

package chaos

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/chaoswriter"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/lease"
)

// The writer process is package chaoswriter's (a go-sqlite3 writer here;
// the cgo-free bases build it into programs of their own); these are its
// names as the checks use them.
const (
	envRole       = chaoswriter.EnvRole
	envDSN        = chaoswriter.EnvDSN
	envPath       = chaoswriter.EnvPath
	envWriter     = chaoswriter.EnvWriter
	envGoroutines = chaoswriter.EnvGoroutines
	envLog        = chaoswriter.EnvLog
	envSeed       = chaoswriter.EnvSeed
	envGiveUp     = chaoswriter.EnvGiveUp
	ledgerScope   = chaoswriter.Scope
	ledgerLane    = chaoswriter.Lane
	ledgerSchema  = chaoswriter.Schema
	classCtx      = chaoswriter.ClassCtx
	classLocked   = chaoswriter.ClassLocked
)

var (
	allowedClass = chaoswriter.AllowedClass
	classify     = chaoswriter.Classify
	now          = chaoswriter.Now
)

func init() {
	roles["writer"] = func() int { return chaoswriter.Main(&cleolease.Driver{}) }
	roles["breaker"] = breakerMain
}

// breakerMain breaks the ledger lane with force through an engine of its
// own (lease.Open + Engine.Break), as an administrator's tool would, and
// reports on stdout: "B <pid> <epoch>", "B free", or "E <class> <error>".
func breakerMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	path := os.Getenv(envPath)
	eng, err := lease.Open(ctx, lease.Options{Base: mattn.For(nil), Path: path, DSN: "file:" + path})
	if err != nil {
		fmt.Printf("E %s %q\n", classify(ctx, err), err.Error())
		return 0
	}
	defer eng.Close()
	h, err := eng.Break(ctx, ledgerScope, ledgerLane, true)
	switch {
	case err != nil:
		fmt.Printf("E %s %q\n", classify(ctx, err), err.Error())
	case h == nil:
		fmt.Println("B free")
	default:
		fmt.Printf("B %d %d\n", h.PID, h.Epoch)
	}
	return 0
}
