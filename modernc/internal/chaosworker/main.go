// Command chaosworker is the chaos ledger's writer process over the
// modernc base (internal/chaoswriter of the root module): the chaos tests
// run with -chaos.bases including modernc build it and start it beside
// their go-sqlite3 writers on one file.
package main

import (
	"os"

	"github.com/cleocode/cleolease/internal/chaoswriter"
	"github.com/cleocode/cleolease/modernc"
)

func main() { os.Exit(chaoswriter.Main(&modernc.Driver{})) }
