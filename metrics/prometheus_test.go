package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/metrics"
)

// TestPrometheusScrape: through OpenTelemetry's Prometheus exporter, a
// scrape of /metrics after a contended write shows the instruments under
// their Prometheus names, with the write's wait in the histogram.
func TestPrometheusScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := metrics.Observe(metrics.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	scrape := func() string {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	db := open(t, "file:"+filepath.Join(testdir.New(t), "prom.db"))
	ctx := context.Background()
	l, err := cleolease.AcquireLease(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (1)`)
		done <- err
	}()
	waiting := regexp.MustCompile(`(?m)^cleolease_lease_waiters\{[^}]*cleolease_lane="default"[^}]*\} 1$`)
	proctest.Eventually(t, "the scrape to show one waiter", func() bool { return waiting.MatchString(scrape()) })
	l.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	body := scrape()
	for _, name := range []string{
		"cleolease_lease_wait_duration_seconds_count", "cleolease_lease_hold_duration_seconds_count",
	} {
		m := regexp.MustCompile(`(?m)^` + name + `\{[^}]*cleolease_outcome="(granted|released)"[^}]*\} (\d+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s in the scrape:\n%s", name, body)
		}
		if n, _ := strconv.Atoi(m[2]); n < 2 {
			t.Errorf("%s = %d, want at least 2 (the table's creation and the waiting write)", name, n)
		}
	}
	if !regexp.MustCompile(`(?m)^cleolease_lease_waiters\{[^}]*\} 0$`).MatchString(body) {
		t.Errorf("no waiters gauge back at 0 in the scrape:\n%s", body)
	}
}
