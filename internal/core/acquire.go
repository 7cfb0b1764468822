package core

import (
	"context"
	"errors"

	"github.com/cleocode/cleolease/internal/leasectx"
	"github.com/cleocode/cleolease/lease"
)

// Shared returns the connector as package writer sees it
// (leasectx.Connector); a base's package returns it from the finder it
// registers (leasectx.RegisterFinder).
func (c *Connector) Shared() leasectx.Connector { return sharedConnector{c} }

// sharedConnector is a Connector as package writer sees it.
type sharedConnector struct{ c *Connector }

func (s sharedConnector) Leased() bool          { return s.c.leased() }
func (s sharedConnector) Engine() *lease.Engine { return s.c.Engine() }
func (s sharedConnector) Acquire(ctx context.Context) (*lease.Hold, error) {
	return s.c.acquire(ctx, nil)
}

// acquire takes the lease for a write made with ctx: nil when the write
// takes none (opted out), a Hold otherwise (degraded in mode local at the
// wait bound). A context that ends while waiting returns exactly
// ctx.Err().
//
// confirm, when not nil, is the connection of the write transaction the
// caller opens next: a waiter told of its grant opens it and confirms the
// grant there (lease.AcquireOptions.Confirm; the Hold is then Begun).
func (c *Connector) acquire(ctx context.Context, confirm lease.Confirmer) (*lease.Hold, error) {
	if leasectx.NoLease(ctx) {
		return nil, nil
	}
	e := c.Engine()
	if e == nil {
		return nil, ErrEngineNotOpen
	}
	prio := leasectx.Priority(ctx, c.cfg.Priority)
	scope, lane := leasectx.Lane(ctx, c.cfg.Scope, c.cfg.Lane)
	h, err := e.Acquire(ctx, scope, lane, lease.AcquireOptions{Priority: prio, Wait: c.cfg.Wait, Require: c.cfg.Mode == ModeRequire, Confirm: confirm})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// database/sql and go-sqlite3 return the context's error itself,
		// and callers compare it with ==; the detail goes to the log.
		c.log.DebugContext(context.WithoutCancel(ctx), "cleolease: gave up waiting for the writer lease", "err", err)
		return nil, ctx.Err()
	}
	return h, c.writeErr(err)
}
