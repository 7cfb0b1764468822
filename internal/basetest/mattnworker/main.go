// Command mattnworker is the basetest worker over the go-sqlite3 base
// (internal/mattn): the go-sqlite3 process of the tests that run processes
// of different bases on one file (the modernc base's tests build it with
// cgo and run it beside their own cgo-free workers). See basetest.Main for
// its environment and protocol.
package main

import (
	"os"

	_ "github.com/mattn/go-sqlite3" // registers "sqlite3"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/mattn"
)

func main() {
	os.Exit(basetest.Main(mattn.For(nil), "sqlite3", func(path string) string {
		return "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000"
	}))
}
