package metrics

import (
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cleocode/cleolease/writer"
)

// The attribute keys of the measurements.
const (
	keyScope   = attribute.Key("cleolease.scope")
	keyLane    = attribute.Key("cleolease.lane")
	keyOutcome = attribute.Key("cleolease.outcome")
	keyFile    = attribute.Key("cleolease.file")
)

// laneKey is one (file, scope, lane) triple as an Event names it.
type laneKey struct{ file, scope, lane string }

// outcomeKey is a triple with an outcome.
type outcomeKey struct {
	laneKey
	outcome string
}

// attrCache owns the attribute sets of the measurements: built once per
// (file, scope, lane[, outcome]), so that recording allocates nothing, and
// capped at max distinct triples, past which a triple is recorded as
// Other.
type attrCache struct {
	file   bool // the file is an attribute (WithFile)
	max    int
	logger *slog.Logger

	mu       sync.RWMutex
	lanes    map[laneKey]metric.MeasurementOption
	outcomes map[outcomeKey]metric.MeasurementOption
	warned   bool
}

func newAttrCache(file bool, max int, logger *slog.Logger) *attrCache {
	return &attrCache{file: file, max: max, logger: logger,
		lanes: map[laneKey]metric.MeasurementOption{}, outcomes: map[outcomeKey]metric.MeasurementOption{}}
}

// key is ev's triple, the file left out unless it is an attribute.
func (a *attrCache) key(ev writer.Event) laneKey {
	k := laneKey{scope: ev.Scope, lane: ev.Lane}
	if a.file {
		k.file = ev.Path
	}
	return k
}

// lane returns the attributes scope and lane (and file) of ev.
func (a *attrCache) lane(ev writer.Event) metric.MeasurementOption {
	k := a.key(ev)
	a.mu.RLock()
	o, ok := a.lanes[k]
	a.mu.RUnlock()
	if ok {
		return o
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.laneLocked(k)
}

// laneLocked is lane under a.mu, adding k (or Other, past the cap).
func (a *attrCache) laneLocked(k laneKey) metric.MeasurementOption {
	if o, ok := a.lanes[k]; ok {
		return o
	}
	if len(a.lanes) >= a.max {
		if !a.warned {
			a.warned = true
			a.logger.Warn("cleolease/metrics: more lanes than the cap; the rest are recorded as _other",
				"cap", a.max, "scope", k.scope, "lane", k.lane)
		}
		k = a.other()
		if o, ok := a.lanes[k]; ok {
			return o
		}
	}
	o := metric.WithAttributeSet(attribute.NewSet(a.kvs(k)...))
	a.lanes[k] = o
	return o
}

// other is the triple the ones past the cap are recorded as.
func (a *attrCache) other() laneKey {
	k := laneKey{scope: Other, lane: Other}
	if a.file {
		k.file = Other
	}
	return k
}

func (a *attrCache) kvs(k laneKey) []attribute.KeyValue {
	kv := []attribute.KeyValue{keyScope.String(k.scope), keyLane.String(k.lane)}
	if a.file {
		kv = append(kv, keyFile.String(k.file))
	}
	return kv
}

// outcome returns the attributes of lane(ev) and ev's outcome.
func (a *attrCache) outcome(ev writer.Event) metric.MeasurementOption {
	k := outcomeKey{a.key(ev), ev.Outcome}
	a.mu.RLock()
	o, ok := a.outcomes[k]
	a.mu.RUnlock()
	if ok {
		return o
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, known := a.lanes[k.laneKey]; !known {
		a.laneLocked(k.laneKey)
		if _, known := a.lanes[k.laneKey]; !known {
			k.laneKey = a.other() // past the cap
		}
	}
	if o, ok := a.outcomes[k]; ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(append(a.kvs(k.laneKey), keyOutcome.String(k.outcome))...))
	a.outcomes[k] = o
	return o
}
