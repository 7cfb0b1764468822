package main

// Formatting of the demo's and bench's figures.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/cleocode/cleolease/internal/workload"
)

// fmtInt writes n with thousands separators.
func fmtInt(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtMS writes a latency in milliseconds with sensible precision.
func fmtMS(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.2f", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f", ms)
	}
	return fmt.Sprintf("%.0f", ms)
}

// fmtLatency writes the committed tries' p50 / p99 / max.
func fmtLatency(f workload.Figures) string {
	return fmt.Sprintf("%s / %s / %s ms", fmtMS(f.P50), fmtMS(f.P99), fmtMS(f.Max))
}

// fmtLanded is fmtLatency for the time until a write lands.
func fmtLanded(f workload.Figures) string {
	return fmt.Sprintf("%s / %s / %s ms", fmtMS(f.LandP50), fmtMS(f.LandP99), fmtMS(f.LandMax))
}

// newTable is a table with the given header (see printTable).
func newTable(w io.Writer, header ...any) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(header...)
	return t
}

// printTable writes rows under header as a table, or, when that would be
// wider than width (a long name, huge figures), each row as wrapped lines:
// its first keys cells, then every other cell after its header
// ("32x1-1ms txlock: commits/s 999,999, errors 0, ...").
func printTable(w io.Writer, header []string, rows [][]string, keys int) {
	var b strings.Builder
	hs := make([]any, len(header))
	for i, h := range header {
		hs[i] = h
	}
	t := newTable(&b, hs...)
	for _, row := range rows {
		t.Append(row)
	}
	t.Render()
	if widest(b.String()) <= width {
		fmt.Fprint(w, b.String())
		return
	}
	for _, row := range rows {
		var parts []string
		for i := keys; i < len(row); i++ {
			if row[i] != "" {
				parts = append(parts, strings.TrimSpace(header[i]+" "+row[i]))
			}
		}
		fmt.Fprintln(w, wrap("", "    ", strings.Join(row[:keys], " ")+": "+strings.Join(parts, ", ")))
	}
}
