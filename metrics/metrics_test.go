package metrics_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/metrics"
)

// The children of the multi-process tests: CLEOLEASE_METRICS_ROLE names
// the role, CLEOLEASE_DSN the database.
func TestMain(m *testing.M) {
	switch os.Getenv("CLEOLEASE_METRICS_ROLE") {
	case "":
		os.Exit(m.Run())
	case "hold":
		os.Exit(roleHold())
	case "write":
		os.Exit(roleWrite())
	}
	os.Exit(2)
}

// roleHold takes the lease, says "held" and waits for stdin to close (it
// is killed before).
func roleHold() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		println(err.Error())
		return 1
	}
	l, err := cleolease.AcquireLease(context.Background(), db)
	if err != nil {
		println(err.Error())
		return 1
	}
	defer l.Release()
	os.Stdout.WriteString("held\n")
	os.Stdin.Read(make([]byte, 1))
	return 0
}

// roleWrite makes one leased write (waiting for the lane) and says "ok".
func roleWrite() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		println(err.Error())
		return 1
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO t(who) VALUES ('child')`); err != nil {
		println(err.Error())
		return 1
	}
	os.Stdout.WriteString("ok\n")
	return 0
}

// reading collects what a ManualReader holds.
type reading struct {
	t *testing.T
	r *sdkmetric.ManualReader
}

func (rd reading) collect() map[string]metricdata.Aggregation {
	rd.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := rd.r.Collect(context.Background(), &rm); err != nil {
		rd.t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// matches reports whether set has every pair of want.
func matches(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.AsString() != v {
			return false
		}
	}
	return true
}

// sum is the value of the counter name's point whose attributes include
// every pair of want (0 when there is none).
func (rd reading) sum(name string, want map[string]string) int64 {
	rd.t.Helper()
	d, ok := rd.collect()[name]
	if !ok {
		return 0
	}
	s, ok := d.(metricdata.Sum[int64])
	if !ok {
		rd.t.Fatalf("%s is %T, want a Sum[int64]", name, d)
	}
	var n int64
	for _, p := range s.DataPoints {
		if matches(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// gauge is the value of the gauge name's point for want (-1 when none).
func (rd reading) gauge(name string, want map[string]string) int64 {
	rd.t.Helper()
	d, ok := rd.collect()[name]
	if !ok {
		return -1
	}
	g, ok := d.(metricdata.Gauge[int64])
	if !ok {
		rd.t.Fatalf("%s is %T, want a Gauge[int64]", name, d)
	}
	for _, p := range g.DataPoints {
		if matches(p.Attributes, want) {
			return p.Value
		}
	}
	return -1
}

// histogram returns the count, sum and max (s) of name's points for want.
func (rd reading) histogram(name string, want map[string]string) (count uint64, sum, max float64) {
	rd.t.Helper()
	d, ok := rd.collect()[name]
	if !ok {
		return 0, 0, 0
	}
	h, ok := d.(metricdata.Histogram[float64])
	if !ok {
		rd.t.Fatalf("%s is %T, want a Histogram[float64]", name, d)
	}
	for _, p := range h.DataPoints {
		if matches(p.Attributes, want) {
			count += p.Count
			sum += p.Sum
			if m, ok := p.Max.Value(); ok && m > max {
				max = m
			}
		}
	}
	return count, sum, max
}

// TestInstrumentsAfterAKnownWorkload runs, against one file, each thing
// the instruments count — a wait of a known least length, a timeout, a
// crashed holder reclaimed, a hand-off to another process, a broken
// (lost) grant, a migration run — and reads each instrument back from the
// SDK's manual reader.
func TestInstrumentsAfterAKnownWorkload(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	stop, err := metrics.Observe(metrics.WithMeterProvider(provider))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rd := reading{t, reader}
	ctx := context.Background()

	path := filepath.Join(testdir.New(t), "m.db")
	cfg, err := cleolease.ParseDSN("file:" + path + "?_journal_mode=WAL&_lease_linger=0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.MigrationsFS = fstest.MapFS{"1_t.up.sql": {Data: []byte(`CREATE TABLE t(who TEXT);`)}}
	db, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	main := map[string]string{"cleolease.scope": "main", "cleolease.lane": "default"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range main {
			m[a] = b
		}
		return m
	}
	// The cold open ran the migration, under the cold-open lease.
	if n := rd.sum("cleolease.migration.runs", map[string]string{"cleolease.scope": "cleolease", "cleolease.lane": "migrate", "cleolease.outcome": "ok"}); n != 1 {
		t.Fatalf("migration runs ok = %d, want 1", n)
	}

	// A wait of a known least length: a writer waits while this
	// goroutine holds the lease; from the moment the gauge shows it
	// waiting until the release, it cannot have been granted.
	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, `INSERT INTO t(who) VALUES ('waiter')`)
		done <- err
	}()
	proctest.Eventually(t, "the writer to wait", func() bool { return rd.gauge("cleolease.lease.waiters", main) == 1 })
	waitingSince := time.Now()
	time.Sleep(20 * time.Millisecond) // (a length for the wait, not synchronisation)
	l.Release()
	heldFor := time.Since(waitingSince)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g := rd.gauge("cleolease.lease.waiters", main); g != 0 {
		t.Fatalf("waiters after the wait = %d, want 0", g)
	}
	count, _, max := rd.histogram("cleolease.lease.wait.duration", with("cleolease.outcome", "granted"))
	if count < 2 || max < (20*time.Millisecond).Seconds() {
		t.Fatalf("wait.duration granted: count %d, max %.4fs; want at least 2 waits, one of at least 20ms", count, max)
	}
	hcount, _, hmax := rd.histogram("cleolease.lease.hold.duration", with("cleolease.outcome", "released"))
	if hcount < 2 || hmax < heldFor.Seconds()-0.001 && hmax < (20*time.Millisecond).Seconds() {
		t.Fatalf("hold.duration released: count %d, max %.4fs; want the held lease's at least 20ms", hcount, hmax)
	}

	// A timeout: a write whose context's deadline passes while the lease
	// is held.
	l, err = cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	_, err = db.ExecContext(tctx, `INSERT INTO t(who) VALUES ('late')`)
	cancel()
	l.Release()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write past its deadline: %v", err)
	}
	if n := rd.sum("cleolease.lease.abandoned", with("cleolease.outcome", "deadline")); n != 1 {
		t.Fatalf("abandoned deadline = %d, want 1", n)
	}
	if c, _, _ := rd.histogram("cleolease.lease.wait.duration", with("cleolease.outcome", "deadline")); c != 1 {
		t.Fatalf("wait.duration deadline count = %d, want 1", c)
	}

	// A crashed holder: another process takes the lease and is killed;
	// the next write reclaims the lane from the dead holder.
	dsn := "CLEOLEASE_DSN=file:" + path + "?_journal_mode=WAL&_lease_linger=0"
	holder := proctest.Start(t, "CLEOLEASE_METRICS_ROLE=hold", dsn)
	holder.Expect("held")
	holder.Cmd.Process.Kill()
	holder.Cmd.Wait()
	if _, err := db.ExecContext(ctx, `INSERT INTO t(who) VALUES ('after the crash')`); err != nil {
		t.Fatal(err)
	}
	if n := rd.sum("cleolease.lease.reclaims", with("cleolease.outcome", "dead")); n != 1 {
		t.Fatalf("reclaims dead = %d, want 1", n)
	}

	// A hand-off: another process waits while this one holds; the
	// release hands the lane to it.
	l, err = cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	w := proctest.Start(t, "CLEOLEASE_METRICS_ROLE=write", dsn)
	proctest.Eventually(t, "the other process to wait", func() bool {
		st, err := cleolease.Status(ctx, db)
		for _, ls := range st {
			if err == nil && ls.Scope == "main" && ls.Lane == "default" && len(ls.Waiters) == 1 {
				return true
			}
		}
		return false
	})
	l.Release()
	w.Expect("ok")
	if n := rd.sum("cleolease.lease.handoffs", main); n != 1 {
		t.Fatalf("handoffs = %d, want 1", n)
	}

	// A lost grant: the lane is broken while held; the hold ends lost.
	l, err = cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cleolease.Break(ctx, db, "main", "default", true); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx); !errors.Is(err, cleolease.ErrLeaseLost) {
		t.Fatalf("Check after Break: %v, want ErrLeaseLost", err)
	}
	l.Release()
	if n := rd.sum("cleolease.lease.lost", main); n != 1 {
		t.Fatalf("lost = %d, want 1", n)
	}
	if c, _, _ := rd.histogram("cleolease.lease.hold.duration", with("cleolease.outcome", "lost")); c != 1 {
		t.Fatalf("hold.duration lost count = %d, want 1", c)
	}

	// Nothing is recorded once stopped.
	stop()
	before, _, _ := rd.histogram("cleolease.lease.wait.duration", main)
	if _, err := db.ExecContext(ctx, `INSERT INTO t(who) VALUES ('unobserved')`); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := rd.histogram("cleolease.lease.wait.duration", main); after != before {
		t.Fatalf("wait.duration count went from %d to %d after stop", before, after)
	}
}

// dump renders every data point's attributes, for a search.
func (rd reading) dump() string {
	var b strings.Builder
	var rm metricdata.ResourceMetrics
	if err := rd.r.Collect(context.Background(), &rm); err != nil {
		rd.t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			fmt.Fprintf(&b, "%s %+v\n", m.Name, m.Data)
		}
	}
	return b.String()
}

// open opens dsn through cleolease with a table t(x).
func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t(x)`); err != nil {
		t.Fatal(err)
	}
	return db
}
