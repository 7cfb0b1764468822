// Command benchworker is one worker process of "cleolease bench --base
// ncruces": the txlock, flock and cleolease peers on ncruces/go-sqlite3
// (internal/workload's protocol and workload; see workload.ServeWorker).
package main

import (
	"context"
	"os"

	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3", the txlock and flock peers' driver

	"github.com/cleocode/cleolease/internal/workload"
	_ "github.com/cleocode/cleolease/ncruces" // registers "cleolease-ncruces"
)

func main() { os.Exit(workload.ServeWorker(context.Background(), os.Args[1:], os.Stdin, os.Stdout)) }
