package cleolease

import "github.com/cleocode/cleolease/writer"

// Event is writer.Event: one thing a lease engine of this process did (a
// wait that started or ended, a hold that ended, a hand-off, a reclaim, a
// lost lease, a migration run), for an Observer.
type Event = writer.Event

// EventKind is writer.EventKind.
type EventKind = writer.EventKind

// Observer is writer.Observer: it receives the Events of every cleolease
// engine in the process (AddObserver). The nested module
// github.com/cleocode/cleolease/otel records them as OpenTelemetry
// metrics.
type Observer = writer.Observer

// The kinds of Event (writer's).
const (
	WaitStarted   = writer.WaitStarted
	WaitEnded     = writer.WaitEnded
	HoldEnded     = writer.HoldEnded
	HandedOff     = writer.HandedOff
	Reclaimed     = writer.Reclaimed
	Lost          = writer.Lost
	MigrationsRun = writer.MigrationsRun
)

// AddObserver is writer.AddObserver: o receives the Events of every
// cleolease engine in the process until the returned function is called.
func AddObserver(o Observer) (remove func()) { return writer.AddObserver(o) }
