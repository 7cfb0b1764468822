// Command chaosworker is the chaos ledger's writer process over the
// ncruces base (internal/chaoswriter of the root module): the chaos tests
// run with -chaos.bases including ncruces build it and start it beside
// their go-sqlite3 writers on one file.
package main

import (
	"os"

	"github.com/cleocode/cleolease/internal/chaoswriter"
	"github.com/cleocode/cleolease/ncruces"
)

func main() { os.Exit(chaoswriter.Main(&ncruces.Driver{})) }
