package metrics

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/cleocode/cleolease/writer"
)

// DefaultMaxLanes is how many distinct (file, scope, lane) triples
// Observe records under their own names unless WithMaxLanes says
// otherwise.
const DefaultMaxLanes = 100

// Other is the scope, lane and file of the triples past the cap
// (WithMaxLanes).
const Other = "_other"

// Option configures Observe.
type Option func(*config)

type config struct {
	provider metric.MeterProvider
	file     bool
	maxLanes int
	logger   *slog.Logger
}

// WithMeterProvider records on p instead of the global MeterProvider
// (otel.GetMeterProvider at the time of Observe).
func WithMeterProvider(p metric.MeterProvider) Option {
	return func(c *config) { c.provider = p }
}

// WithFile adds the database file's path (cleolease.file) to every
// measurement. Off by default: paths are the application's, and each one
// multiplies the series.
func WithFile(on bool) Option {
	return func(c *config) { c.file = on }
}

// WithMaxLanes caps the distinct (file, scope, lane) triples recorded
// under their names at n (n ≥ 1); later ones are recorded as Other.
// DefaultMaxLanes when not given.
func WithMaxLanes(n int) Option {
	return func(c *config) { c.maxLanes = n }
}

// WithLogger logs the one warning Observe may give (the cap reached) to
// l instead of slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// Observe records the lease events of every cleolease engine in the
// process (open now or later, over any base driver) on the instruments
// the package documentation lists, until stop is called (stop may be
// called more than once). Observing twice records twice.
//
// Errors: a *ConfigError for WithMaxLanes below 1 or a nil MeterProvider;
// the MeterProvider's error creating an instrument.
func Observe(opts ...Option) (stop func(), err error) {
	c := config{maxLanes: DefaultMaxLanes}
	for _, o := range opts {
		o(&c)
	}
	if c.maxLanes < 1 {
		return nil, &ConfigError{Option: "WithMaxLanes", Reason: fmt.Sprintf("%d: the cap must be at least 1", c.maxLanes)}
	}
	if c.provider == nil {
		c.provider = otel.GetMeterProvider()
		if c.provider == nil {
			return nil, &ConfigError{Option: "WithMeterProvider", Reason: "no MeterProvider"}
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	r, err := newRecorder(c)
	if err != nil {
		return nil, err
	}
	return writer.AddObserver(r), nil
}

// ConfigError is an Option that Observe cannot use.
type ConfigError struct {
	Option string // the option's function name, as WithMaxLanes
	Reason string
}

func (e *ConfigError) Error() string {
	return "cleolease/metrics: " + e.Option + ": " + e.Reason
}

// background is the context measurements are recorded with: the lease's
// events are not tied to a request's context.
var background = context.Background()
