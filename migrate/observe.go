package migrate

import (
	"time"

	"github.com/cleocode/cleolease/lease"
)

// observeRun reports a migration run that began at start and ended with
// err to the lease engine's observers (lease.MigrationsRun): the file is
// the engine's, "" for a run without one.
func observeRun(o Options, start time.Time, err error) {
	ev := lease.Event{Kind: lease.MigrationsRun, Scope: Scope, Lane: Lane,
		Duration: time.Since(start), Outcome: lease.OutcomeOK}
	if o.Engine != nil {
		ev.Path = o.Engine.Path()
	}
	if err != nil {
		ev.Outcome = lease.OutcomeError
	}
	lease.Emit(ev)
}
