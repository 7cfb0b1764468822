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

// newTable is a table with the given header, for the demo and bench.
func newTable(w io.Writer, header ...any) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(header...)
	return t
}
