package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/metrics"
)

// TestLanesPastTheCapAreOther: with WithMaxLanes(3) (main/default, which
// creates the table, s/a and s/b), the later lanes' writes are recorded
// under scope, lane and file "_other", with one warning; WithFile adds the
// file. Holder ids are never attributes.
func TestLanesPastTheCapAreOther(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	var log bytes.Buffer
	stop, err := metrics.Observe(metrics.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		metrics.WithMaxLanes(3), metrics.WithFile(true), metrics.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rd := reading{t, reader}
	path := filepath.Join(testdir.New(t), "cap.db")
	db := open(t, "file:"+path)
	ctx := context.Background()
	for _, lane := range []string{"a", "b", "c", "d", "c"} {
		if _, err := db.ExecContext(cleolease.WithLane(ctx, "s", lane), `INSERT INTO t VALUES (1)`); err != nil {
			t.Fatal(err)
		}
	}
	for lane, want := range map[string]uint64{"a": 1, "b": 1, "_other": 3} {
		scope := "s"
		file := path
		if lane == "_other" {
			scope, file = "_other", "_other"
		}
		c, _, _ := rd.histogram("cleolease.lease.wait.duration", map[string]string{
			"cleolease.scope": scope, "cleolease.lane": lane, "cleolease.file": file, "cleolease.outcome": "granted"})
		if c != want {
			t.Errorf("lane %s: %d waits recorded, want %d", lane, c, want)
		}
	}
	if n := strings.Count(log.String(), "more lanes than the cap"); n != 1 {
		t.Errorf("%d warnings about the cap, want 1:\n%s", n, log.String())
	}
	if strings.Contains(rd.dump(), "cl-") {
		t.Errorf("a holder id is an attribute:\n%s", rd.dump())
	}
}

// TestObserveRefusesABadCap: WithMaxLanes(0) is a *ConfigError naming
// the option.
func TestObserveRefusesABadCap(t *testing.T) {
	_, err := metrics.Observe(metrics.WithMaxLanes(0))
	var ce *metrics.ConfigError
	if !errors.As(err, &ce) || ce.Option != "WithMaxLanes" {
		t.Fatalf("Observe(WithMaxLanes(0)) = %v, want a *ConfigError for WithMaxLanes", err)
	}
}
