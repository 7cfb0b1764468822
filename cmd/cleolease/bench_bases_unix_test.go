//go:build unix

package main

import (
	"encoding/json"
	"testing"

	"github.com/cleocode/cleolease/internal/workload"
)

// TestBenchOnEveryBase (issue 30): --base runs every peer on the cgo-free
// bases too, through their worker programs (built with the go command,
// which the Windows test binaries under Wine do not have): each base's
// txlock, flock and cleolease commit, with no error and no lost update,
// and cleolease's ratios are against the same base's peers.
func TestBenchOnEveryBase(t *testing.T) {
	r := cli(t, "bench", "--only", "1x1", "--duration", "200ms", "--base", "go-sqlite3,modernc,ncruces", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var out []benchResult
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, r.stdout)
	}
	var bases []string
	for _, res := range out {
		bases = append(bases, res.Base)
		if len(res.Lines) != len(res.Workload.Peers()) {
			t.Errorf("%s: %d lines, want %d", res.Base, len(res.Lines), len(res.Workload.Peers()))
		}
		for _, l := range res.Lines {
			if l.CommitsPerSec <= 0 || l.Errors != 0 || l.LostUpdates != 0 {
				t.Errorf("%s %s: %+v", res.Base, l.Driver, l)
			}
		}
		if res.Ratios[workload.TxLock] <= 0 {
			t.Errorf("%s: cleolease over txlock %v", res.Base, res.Ratios[workload.TxLock])
		}
	}
	if len(bases) != 3 || bases[0] != "go-sqlite3" || bases[1] != "modernc" || bases[2] != "ncruces" {
		t.Fatalf("bases %v: want go-sqlite3, modernc, ncruces", bases)
	}
}
