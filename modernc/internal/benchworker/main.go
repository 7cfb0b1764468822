// Command benchworker is one worker process of "cleolease bench --base
// modernc": the txlock, flock and cleolease peers on modernc.org/sqlite
// (internal/workload's protocol and workload; see workload.ServeWorker).
package main

import (
	"context"
	"os"

	_ "modernc.org/sqlite" // registers "sqlite", the txlock and flock peers' driver

	"github.com/cleocode/cleolease/internal/workload"
	_ "github.com/cleocode/cleolease/modernc" // registers "cleolease-modernc"
)

func main() { os.Exit(workload.ServeWorker(context.Background(), os.Args[1:], os.Stdin, os.Stdout)) }
