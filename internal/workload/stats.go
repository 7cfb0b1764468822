package workload

import (
	"slices"
	"time"
)

// Figures are the workload figures of one run, summed over its workers.
type Figures struct {
	Workers       int               `json:"workers"`                 // worker processes
	Goroutines    int               `json:"goroutines"`              // writers per process
	Duration      time.Duration     `json:"duration_ns"`             // of the writing
	Commits       int64             `json:"commits"`                 // all workers'
	CommitsPerSec float64           `json:"commits_per_sec"`         // Commits / Duration
	LockErrors    int64             `json:"lock_errors"`             // failed transactions classed "locked"
	OtherErrors   int64             `json:"other_errors"`            // failed transactions of other classes
	Errors        map[string]int64  `json:"errors"`                  // failed transactions by class
	Samples       map[string]string `json:"error_samples,omitempty"` // one message per class
	MinCommits    int64             `json:"min_commits_per_worker"`
	MaxCommits    int64             `json:"max_commits_per_worker"`
	Fairness      float64           `json:"fairness"` // MinCommits / MaxCommits
	// P50, P99 and Max are the committed transactions' latency
	// percentiles, begin to commit, pooled over the workers.
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
	// LandP50, LandP99 and LandMax are the percentiles of the time from a
	// write's first attempt to its commit, failed attempts retried (see
	// Result.Landed); P50, P99 and Max time only the attempt that
	// committed.
	LandP50 time.Duration    `json:"land_p50_ns"`
	LandP99 time.Duration    `json:"land_p99_ns"`
	LandMax time.Duration    `json:"land_max_ns"`
	Ops     map[string]int64 `json:"ops"`             // commits by operation
	Lease   *LeaseCounters   `json:"lease,omitempty"` // cleolease only
	// PeakRSSkB is the largest Extra["hwm_kb"] of the workers (0 if none
	// reported it).
	PeakRSSkB int64 `json:"peak_rss_kb,omitempty"`
}

// Errs is the failed transactions of every class.
func (f Figures) Errs() int64 { return f.LockErrors + f.OtherErrors }

// LeaseCounters are the lease engine's counters summed over the workers
// (the fields of lease.Stats of the same names).
type LeaseCounters struct {
	Grants, FastGrants, Claims, Handoffs int64
	Degraded, Unavailable, Lost, Fenced  int64
	ReclaimDead, DeadWaiters             int64
}

// Summarize sums the results of one run of workers that each ran
// goroutines writers for d. Fairness is min/max commits per worker
// process; the latency percentiles pool every transaction.
func Summarize(results []Result, goroutines int, d time.Duration) Figures {
	f := Figures{Workers: len(results), Goroutines: goroutines, Duration: d,
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
				f.Lease = &LeaseCounters{}
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
		f.PeakRSSkB = max(f.PeakRSSkB, r.Extra["hwm_kb"])
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
	f.P50, f.P99, f.Max = Percentile(lat, 0.50), Percentile(lat, 0.99), Percentile(lat, 1)
	f.LandP50, f.LandP99, f.LandMax = Percentile(landed, 0.50), Percentile(landed, 0.99), Percentile(landed, 1)
	return f
}

// Percentile is the p-quantile (0 ≤ p ≤ 1, nearest rank below) of sorted
// microseconds, as a duration; 0 for none.
func Percentile(sortedUS []int64, p float64) time.Duration {
	if len(sortedUS) == 0 {
		return 0
	}
	return time.Duration(sortedUS[int(p*float64(len(sortedUS)-1))]) * time.Microsecond
}

// Median is the median of xs (the upper one of an even count); xs is
// sorted in place.
func Median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
