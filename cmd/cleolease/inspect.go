package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cleocode/cleolease/lease"
)

// inspectDB returns every (scope, lane) of the file in the shape of
// lease.Engine.Status, read through db (opened read-only by the caller)
// and judged by a read-only probe of the sidecar next to path (or in
// sidecarDir, the processes' _lease_sidecar_dir, when not empty).
func inspectDB(ctx context.Context, db *sql.DB, path, sidecarDir string, now time.Time) ([]lease.LaneStatus, error) {
	return lease.InspectDB(ctx, db, path, sidecarDir, fixedClock(now))
}

// fixedClock reads the same instant every time, so one report has one "now".
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

func fmtAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Truncate(time.Second).String()
}
