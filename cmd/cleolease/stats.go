package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// loadFigures are the workload figures of one run, summed over workers.
type loadFigures struct {
	Workers       int               `json:"workers"`
	Goroutines    int               `json:"goroutines"`
	Duration      time.Duration     `json:"duration_ns"`
	Commits       int64             `json:"commits"`
	CommitsPerSec float64           `json:"commits_per_sec"`
	LockErrors    int64             `json:"lock_errors"`
	OtherErrors   int64             `json:"other_errors"`
	Errors        map[string]int64  `json:"errors"`
	Samples       map[string]string `json:"error_samples,omitempty"`
	MinCommits    int64             `json:"min_commits_per_worker"`
	MaxCommits    int64             `json:"max_commits_per_worker"`
	Fairness      float64           `json:"fairness"` // min/max commits per worker process
	P50           time.Duration     `json:"p50_ns"`
	P99           time.Duration     `json:"p99_ns"`
	Max           time.Duration     `json:"max_ns"`
	// LandP50, LandP99 and LandMax are the percentiles of the time from a
	// write's first attempt to its commit, failed attempts retried (see
	// workerResult.Landed); P50, P99 and Max time only the attempt that
	// committed.
	LandP50 time.Duration    `json:"land_p50_ns"`
	LandP99 time.Duration    `json:"land_p99_ns"`
	LandMax time.Duration    `json:"land_max_ns"`
	Ops     map[string]int64 `json:"ops"`
	Lease   *leaseCounters   `json:"lease,omitempty"` // cleolease only
}

// leaseCounters are the lease engine counters summed over the workers.
type leaseCounters struct {
	Grants, FastGrants, Claims, Handoffs int64
	Degraded, Unavailable, Lost, Fenced  int64
	ReclaimDead, DeadWaiters             int64
}

func summarize(results []workerResult, goroutines int, d time.Duration) loadFigures {
	f := loadFigures{Workers: len(results), Goroutines: goroutines, Duration: d,
		Errors: map[string]int64{}, Samples: map[string]string{}, Ops: map[string]int64{}}
	var lat, landed []int64
	f.MinCommits = -1
	for _, r := range results {
		f.Commits += r.Commits
		lat = append(lat, r.Latencies...)
		landed = append(landed, r.Landed...)
		for k, v := range r.Errors {
			f.Errors[k] += v
			if k == "locked" {
				f.LockErrors += v
			} else {
				f.OtherErrors += v
			}
		}
		for k, v := range r.Samples {
			f.Samples[k] = v
		}
		for k, v := range r.Ops {
			f.Ops[k] += v
		}
		if st := r.Lease; st != nil {
			if f.Lease == nil {
				f.Lease = &leaseCounters{}
			}
			c := f.Lease
			c.Grants += st.Grants
			c.FastGrants += st.FastGrants
			c.Claims += st.Claims
			c.Handoffs += st.Handoffs
			c.Degraded += st.Degraded
			c.Unavailable += st.Unavailable
			c.Lost += st.Lost
			c.Fenced += st.Fenced
			c.ReclaimDead += st.ReclaimDead
			c.DeadWaiters += st.DeadWaiters
		}
		if f.MinCommits < 0 || r.Commits < f.MinCommits {
			f.MinCommits = r.Commits
		}
		f.MaxCommits = max(f.MaxCommits, r.Commits)
	}
	f.MinCommits = max(f.MinCommits, 0)
	if f.MaxCommits > 0 {
		f.Fairness = float64(f.MinCommits) / float64(f.MaxCommits)
	}
	if d > 0 {
		f.CommitsPerSec = float64(f.Commits) / d.Seconds()
	}
	slices.Sort(lat)
	slices.Sort(landed)
	pct := func(xs []int64, p float64) time.Duration {
		if len(xs) == 0 {
			return 0
		}
		return time.Duration(xs[int(p*float64(len(xs)-1))]) * time.Microsecond
	}
	f.P50, f.P99, f.Max = pct(lat, 0.50), pct(lat, 0.99), pct(lat, 1)
	f.LandP50, f.LandP99, f.LandMax = pct(landed, 0.50), pct(landed, 0.99), pct(landed, 1)
	return f
}

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

func fmtLatency(f loadFigures) string {
	return fmt.Sprintf("%s / %s / %s ms", fmtMS(f.P50), fmtMS(f.P99), fmtMS(f.Max))
}

// fmtLanded is fmtLatency for the time until a write lands.
func fmtLanded(f loadFigures) string {
	return fmt.Sprintf("%s / %s / %s ms", fmtMS(f.LandP50), fmtMS(f.LandP99), fmtMS(f.LandMax))
}

func fmtErrors(f loadFigures) string {
	if len(f.Errors) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(f.Errors))
	for k := range f.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	var total int64
	for _, k := range keys {
		total += f.Errors[k]
		parts = append(parts, fmt.Sprintf("%s %s", fmtInt(f.Errors[k]), k))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return fmtInt(total) + " (" + strings.Join(parts, ", ") + ")"
}

// median of xs (xs is sorted in place).
func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
