// Package metrics records the lease events of every cleolease engine in
// the process — over any base driver: go-sqlite3, modernc.org/sqlite,
// ncruces/go-sqlite3 — as OpenTelemetry metrics, so that a dashboard
// answers how long writers wait for the writer lease and how long it is
// held. It is a module of its own, so that cleolease does not bring
// OpenTelemetry into every build; it uses only cleolease's base-free API
// (package writer).
//
// Call Observe once, at start-up, with the application's MeterProvider
// (by default the global one, otel.GetMeterProvider):
//
//	stop, err := metrics.Observe(metrics.WithMeterProvider(otel.GetMeterProvider()))
//	if err != nil {
//		return err
//	}
//	defer stop()
//
// # Instruments
//
// All are named cleolease.* (OpenTelemetry's db.client.connection.* names
// a wait for a pooled connection, which XSAM/otelsql already reports on
// the same *sql.DB: the lease is another wait):
//
//   - cleolease.lease.wait.duration (histogram, s): how long each write
//     (a transaction, or a statement outside one) waited for the lease,
//     from the call to the grant or to giving up; a write served at once
//     from the lane this process still held records 0. Attributes scope,
//     lane, outcome (granted, degraded, unavailable, canceled, deadline,
//     error).
//   - cleolease.lease.hold.duration (histogram, s): how long each grant
//     was held, from the grant to its release. Attributes scope, lane,
//     outcome (released, lost).
//   - cleolease.lease.waiters (gauge, {waiter}): this process's writes
//     waiting for the lane now; summed over the processes of a file it is
//     the lane's waiters. Attributes scope, lane.
//   - cleolease.lease.handoffs ({hand-off}): lanes this process handed
//     directly to a waiter (of any process).
//   - cleolease.lease.reclaims ({reclaim}): lanes this process took from
//     a holder found dead; outcome says why (dead; ttl, the opt-in
//     _lease_steal_after_ttl; unknown, a holder the OS would not tell
//     about, past its TTL).
//   - cleolease.lease.abandoned ({wait}): waits that ended without the
//     lease; outcome canceled, deadline (the context's), unavailable
//     (_lease_wait in mode require) or degraded (_lease_wait, going
//     ahead without the lease).
//   - cleolease.lease.lost ({grant}): grants of this process found lost
//     (broken, taken over, the row removed, the file replaced).
//   - cleolease.migration.runs ({run}): migration runs this process made
//     under the cold-open lease (scope cleolease, lane migrate); outcome
//     ok or error.
//
// # Attributes and their cardinality
//
// cleolease.scope and cleolease.lane are the scope and lane a context
// carried (WithLane) or the DSN's defaults; cleolease.outcome is one of
// the words above. The database file, cleolease.file, is added only with
// WithFile(true). Scopes, lanes and paths are the application's, so their
// number is too: at most WithMaxLanes distinct (file, scope, lane)
// triples (DefaultMaxLanes) are recorded under their names, and the rest
// under scope, lane and file "_other" (a warning is logged once, to
// slog.Default()). Holder ids and process ids are never attributes.
//
// # Prometheus
//
// Without an OpenTelemetry pipeline, OpenTelemetry's Prometheus exporter
// (go.opentelemetry.io/otel/exporters/prometheus) is the bridge: give
// Observe a MeterProvider built on it and serve promhttp.Handler(). The
// instruments then appear as cleolease_lease_wait_duration_seconds,
// cleolease_lease_hold_duration_seconds, cleolease_lease_waiters,
// cleolease_lease_handoffs_total and so on (the README's "Running in
// production" has the whole program).
package metrics
