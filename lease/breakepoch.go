package lease

import (
	"context"
	"errors"
)

// ErrEpochChanged: BreakEpoch refused because the epoch it was given is no
// longer the lane's active one: the holder it meant has gone, and another
// may hold the lane now.
var ErrEpochChanged = errors.New("lease epoch no longer active")

// BreakEpoch is Break guarded by an epoch, as etcd guards a write by
// revision: it breaks (scope, lane) only if the active row still has
// epoch, checked in the same transaction that breaks it, so an
// administrator who looked at the lane (cleolease status) never breaks a
// holder that took it since. epoch must be positive.
//
// It returns the broken holder's status; nil and no error when the lane is
// free; the active holder's status and an *Error matching ErrEpochChanged
// when another epoch is active (nothing is broken); and Break's errors
// (ErrHolderAlive unless force) otherwise.
func (e *Engine) BreakEpoch(ctx context.Context, scope, lane string, epoch int64, force bool) (*HolderStatus, error) {
	if epoch <= 0 {
		return nil, e.errf("break", scope, lane, ErrEpochChanged, "the epoch must be positive")
	}
	return e.breakLane(ctx, scope, lane, epoch, force)
}
