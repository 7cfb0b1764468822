package metrics

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/cleocode/cleolease/writer"
)

// meterName is the instrumentation scope the instruments are created in.
const meterName = "github.com/cleocode/cleolease/metrics"

// recorder is the writer.Observer that turns each lease Event into a
// measurement on its instrument.
type recorder struct {
	attrs *attrCache

	wait, hold                    metric.Float64Histogram
	waiters                       metric.Int64Gauge
	handoffs, reclaims, abandoned metric.Int64Counter
	lost, migrations              metric.Int64Counter
}

// durationBuckets are the histograms' bucket bounds, in seconds: a lease
// wait or hold runs from microseconds (a grant served at once) to seconds
// (a starved writer, a long transaction).
var durationBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

func newRecorder(c config) (*recorder, error) {
	m := c.provider.Meter(meterName)
	r := &recorder{attrs: newAttrCache(c.file, c.maxLanes, c.logger)}
	var err error
	steps := []func() error{
		func() error {
			r.wait, err = m.Float64Histogram("cleolease.lease.wait.duration", metric.WithUnit("s"),
				metric.WithDescription("How long a write waited for the writer lease, from the call to the grant or to giving up."),
				metric.WithExplicitBucketBoundaries(durationBuckets...))
			return err
		},
		func() error {
			r.hold, err = m.Float64Histogram("cleolease.lease.hold.duration", metric.WithUnit("s"),
				metric.WithDescription("How long a grant of the writer lease was held, from the grant to its release."),
				metric.WithExplicitBucketBoundaries(durationBuckets...))
			return err
		},
		func() error {
			r.waiters, err = m.Int64Gauge("cleolease.lease.waiters", metric.WithUnit("{waiter}"),
				metric.WithDescription("This process's writes waiting for the lane's writer lease now."))
			return err
		},
		func() error {
			r.handoffs, err = m.Int64Counter("cleolease.lease.handoffs", metric.WithUnit("{hand-off}"),
				metric.WithDescription("Lanes this process handed directly to a waiter."))
			return err
		},
		func() error {
			r.reclaims, err = m.Int64Counter("cleolease.lease.reclaims", metric.WithUnit("{reclaim}"),
				metric.WithDescription("Lanes this process took from a holder found dead (outcome: dead, ttl, unknown)."))
			return err
		},
		func() error {
			r.abandoned, err = m.Int64Counter("cleolease.lease.abandoned", metric.WithUnit("{wait}"),
				metric.WithDescription("Waits for the writer lease that ended without it (outcome: canceled, deadline, unavailable, degraded)."))
			return err
		},
		func() error {
			r.lost, err = m.Int64Counter("cleolease.lease.lost", metric.WithUnit("{grant}"),
				metric.WithDescription("Grants of this process found lost (broken, taken over, row removed, file replaced)."))
			return err
		},
		func() error {
			r.migrations, err = m.Int64Counter("cleolease.migration.runs", metric.WithUnit("{run}"),
				metric.WithDescription("Migration runs this process made under the cold-open lease (outcome: ok, error)."))
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// ObserveLease records ev.
func (r *recorder) ObserveLease(ev writer.Event) {
	switch ev.Kind {
	case writer.WaitStarted:
		r.waiters.Record(background, ev.Waiters, r.attrs.lane(ev))
	case writer.WaitEnded:
		r.wait.Record(background, ev.Duration.Seconds(), r.attrs.outcome(ev))
		if ev.Outcome != writer.OutcomeGranted {
			r.abandoned.Add(background, 1, r.attrs.outcome(ev))
		}
		r.waiters.Record(background, ev.Waiters, r.attrs.lane(ev))
	case writer.HoldEnded:
		r.hold.Record(background, ev.Duration.Seconds(), r.attrs.outcome(ev))
	case writer.HandedOff:
		r.handoffs.Add(background, 1, r.attrs.lane(ev))
	case writer.Reclaimed:
		r.reclaims.Add(background, 1, r.attrs.outcome(ev))
	case writer.Lost:
		r.lost.Add(background, 1, r.attrs.lane(ev))
	case writer.MigrationsRun:
		r.migrations.Add(background, 1, r.attrs.outcome(ev))
	}
}
