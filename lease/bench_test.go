package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// pingpong acquires and releases the lane n times, recording per epoch the
// monotonic time the grant arrived and the time release was called.
func pingpong(e *Engine, n int) (acq, rel map[int64]int64, err error) {
	acq, rel = map[int64]int64{}, map[int64]int64{}
	for i := 0; i < n; i++ {
		h, err := e.Acquire(context.Background(), "s", "l", req)
		if err != nil {
			return nil, nil, err
		}
		acq[h.Epoch()] = monoNow()
		rel[h.Epoch()] = monoNow()
		h.Release()
	}
	return acq, rel, nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(p*float64(len(d)-1))]
}

// BenchmarkHandoff measures a clean hand-off between two processes: from
// the holder's Release call to the other process's Acquire returning.
// Both processes alternate on one lane with Slice 0 (strict FIFO) and no
// linger, so every grant is a cross-process hand-off.
func BenchmarkHandoff(b *testing.B) {
	n := b.N
	if n < 1000 {
		n = 1000
	}
	path := newDB(b)
	kid := startChild(b, "pingpong", path, "CLEOLEASE_N="+strconv.Itoa(n))
	kid.expect("ready")
	e := openEngine(b, path, func(o *Options) { o.Linger = 0 })
	b.ResetTimer()
	kid.send("go")
	acq, rel, err := pingpong(e, n)
	if err != nil {
		b.Fatal(err)
	}
	var theirs struct{ Acq, Rel map[int64]int64 }
	if err := json.Unmarshal([]byte(kid.expect("result")), &theirs); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	for k, v := range theirs.Acq {
		acq[k] = v
	}
	for k, v := range theirs.Rel {
		rel[k] = v
	}
	var lat []time.Duration
	_, mineAt := acq[0], 0
	_ = mineAt
	for ep, t := range acq {
		if r, ok := rel[ep-1]; ok && t > r {
			// Only hand-offs between processes: consecutive epochs held by
			// different processes. Both processes alternate, so most are.
			lat = append(lat, time.Duration(t-r))
		}
	}
	if len(lat) == 0 {
		b.Fatal("no hand-offs observed")
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lat)), "samples")
}

// BenchmarkCrashHandoff measures SIGKILL of a holder → the next waiter's
// Acquire returning.
func BenchmarkCrashHandoff(b *testing.B) {
	n := b.N
	if n < 100 {
		n = 100
	}
	var lat []time.Duration
	path := newDB(b)
	e := openEngine(b, path, func(o *Options) { o.Linger = 0 })
	b.ResetTimer()
	for i := 0; i < n; i++ {
		kid := startChild(b, "hold", path)
		kid.expect("held")
		got := make(chan time.Time, 1)
		go func() {
			h, err := e.Acquire(context.Background(), "s", "l", req)
			if err != nil {
				b.Error(err)
			}
			got <- time.Now()
			h.Release()
		}()
		eventually(b, "waiter queued", func() bool { return queueLen(b, path, "s", "l") == 1 })
		t0 := time.Now()
		kid.Cmd.Process.Signal(syscall.SIGKILL)
		lat = append(lat, (<-got).Sub(t0))
		kid.Cmd.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lat)), "samples")
}

func runPingpong(e *Engine) int {
	n, _ := strconv.Atoi(os.Getenv("CLEOLEASE_N"))
	fmt.Println("ready")
	var line [16]byte
	os.Stdin.Read(line[:])
	acq, rel, err := pingpong(e, n)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	out, _ := json.Marshal(struct{ Acq, Rel map[int64]int64 }{acq, rel})
	fmt.Println("result", string(out))
	return 0
}

// BenchmarkContended runs 8 processes that each hold the lane for 1 ms of
// work per transaction (the contention tool's 8×1 workload, lease only).
func BenchmarkContended(b *testing.B) {
	path := newDB(b)
	var kids []*child
	for i := 0; i < 8; i++ {
		kids = append(kids, startChild(b, "rate", path, "CLEOLEASE_DUR=3s", "CLEOLEASE_HOLD=1ms", "CLEOLEASE_LINGER=5ms", "CLEOLEASE_TRACE="+os.Getenv("CLEOLEASE_TRACE")))
	}
	for _, k := range kids {
		k.send("go")
	}
	total, minC, maxC := 0, 1<<30, 0
	acq, rel, req := map[int64]int64{}, map[int64]int64{}, map[int64]int64{}
	var relDur []time.Duration
	for _, k := range kids {
		n, _ := strconv.Atoi(k.expect("commits"))
		total += n
		minC, maxC = min(minC, n), max(maxC, n)
		if os.Getenv("CLEOLEASE_TRACE") != "" {
			var tr [][3]int64
			json.Unmarshal([]byte(k.expect("trace")), &tr)
			for _, x := range tr {
				if x[0] > 0 {
					req[x[0]], acq[x[0]] = x[1], x[2]
				} else {
					rel[-x[0]] = x[1]
					relDur = append(relDur, time.Duration(x[2]))
				}
			}
		}
	}
	if len(acq) > 0 {
		var gap, hold []time.Duration
		for ep, t := range acq {
			if r, ok := rel[ep-1]; ok {
				gap = append(gap, time.Duration(t-r))
			}
			if r, ok := rel[ep]; ok {
				hold = append(hold, time.Duration(r-t))
			}
		}
		var waits []time.Duration
		var worst int64
		for ep, t := range acq {
			waits = append(waits, time.Duration(t-req[ep]))
			if t-req[ep] > acq[worst]-req[worst] || worst == 0 {
				worst = ep
			}
		}
		b.Logf("longest wait: epoch %d of %d", worst, len(acq))
		b.Logf("acquire wait p50 %v p99 %v max %v", percentile(waits, .5), percentile(waits, .99), percentile(waits, 1))
		b.Logf("release call p50 %v p90 %v p99 %v", percentile(relDur, .5), percentile(relDur, .9), percentile(relDur, .99))
		b.Logf("hand-off gap p50 %v p90 %v p99 %v; hold p50 %v p99 %v", percentile(gap, .5), percentile(gap, .9), percentile(gap, .99), percentile(hold, .5), percentile(hold, .99))
	}
	b.ReportMetric(float64(total)/3, "commits/s")
	b.ReportMetric(float64(minC)/float64(maxC), "fairness")
}

// BenchmarkAcquireRelease is the cost of an uncontended Acquire+Release in
// one process: "lingering" reuses the row this process still holds (the
// steady state of an uncontended writer), "claim" (Linger 0) pays a claim
// and a release transaction every time.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, bc := range []struct {
		name   string
		linger time.Duration
	}{{"lingering", time.Hour}, {"claim", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			e := openEngine(b, newDB(b), func(o *Options) { o.Linger = bc.linger })
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h, err := e.Acquire(ctx, "s", "l", req)
				if err != nil {
					b.Fatal(err)
				}
				h.Release()
			}
		})
	}
}
