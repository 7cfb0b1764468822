// Package leasectx carries what a context says about the writer lease
// (the lane, the priority, an opt-out), and finds the lease connector
// behind a *sql.DB, for every cleolease base: package writer sets the
// values and asks for connectors; each base's driver reads the values and
// registers how to find its connectors (RegisterFinder).
package leasectx

import (
	"context"
	"database/sql/driver"
	"sync"

	"github.com/cleocode/cleolease/lease"
)

type laneKey struct{}

type laneVal struct{ scope, lane string }

type priorityKey struct{}

type noLeaseKey struct{}

// WithLane returns ctx carrying (scope, lane); an empty part keeps the
// driver's default for that part.
func WithLane(ctx context.Context, scope, lane string) context.Context {
	return context.WithValue(ctx, laneKey{}, laneVal{scope, lane})
}

// Lane returns the scope and lane ctx carries, each replacing the given
// default unless empty.
func Lane(ctx context.Context, defScope, defLane string) (scope, lane string) {
	scope, lane = defScope, defLane
	if v, ok := ctx.Value(laneKey{}).(laneVal); ok {
		if v.scope != "" {
			scope = v.scope
		}
		if v.lane != "" {
			lane = v.lane
		}
	}
	return scope, lane
}

// WithPriority returns ctx carrying priority p.
func WithPriority(ctx context.Context, p int) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// Priority returns the priority ctx carries, or def.
func Priority(ctx context.Context, def int) int {
	if p, ok := ctx.Value(priorityKey{}).(int); ok {
		return p
	}
	return def
}

// WithoutLease returns ctx opting out of the lease.
func WithoutLease(ctx context.Context) context.Context {
	return context.WithValue(ctx, noLeaseKey{}, true)
}

// NoLease reports whether ctx opts out of the lease.
func NoLease(ctx context.Context) bool {
	v, _ := ctx.Value(noLeaseKey{}).(bool)
	return v
}

// Connector is a base's cleolease connector, as the shared API sees it.
type Connector interface {
	// Leased reports whether writes through the connector take the lease
	// (not mode off, not read-only, not a private database).
	Leased() bool
	// Engine returns the connector's lease engine, or nil before its first
	// connection (and when SQLite opened the file read-only).
	Engine() *lease.Engine
	// Acquire takes the lease for a write made with ctx: nil when ctx
	// opts out (WithoutLease), a Hold otherwise; errors as the driver's
	// writes return them.
	Acquire(ctx context.Context) (*lease.Hold, error)
}

var (
	findersMu sync.RWMutex
	finders   []func(driver.Driver) (Connector, bool)
)

// RegisterFinder adds find to the ways Find recognises a base's driver:
// find returns the Connector behind a driver.Driver of its base (the value
// a *sql.DB's Driver method returns), and false for any other driver. A
// base's package calls it from its init function.
func RegisterFinder(find func(driver.Driver) (Connector, bool)) {
	findersMu.Lock()
	defer findersMu.Unlock()
	finders = append(finders, find)
}

// Find returns the Connector behind d, and false when d is not a
// registered base's cleolease driver.
func Find(d driver.Driver) (Connector, bool) {
	findersMu.RLock()
	defer findersMu.RUnlock()
	for _, find := range finders {
		if c, ok := find(d); ok {
			return c, true
		}
	}
	return nil, false
}
