package leasectx

import (
	"context"
	"database/sql/driver"
	"testing"
)

// A context's lane part replaces the default only where it is not empty;
// priority and opt-out default to the caller's values.
func TestContextValues(t *testing.T) {
	ctx := context.Background()
	if s, l := Lane(ctx, "main", "default"); s != "main" || l != "default" {
		t.Fatalf("Lane of a bare context = %s/%s", s, l)
	}
	if s, l := Lane(WithLane(ctx, "", "jobs"), "main", "default"); s != "main" || l != "jobs" {
		t.Fatalf("Lane with an empty scope = %s/%s, want main/jobs", s, l)
	}
	if s, l := Lane(WithLane(ctx, "a", "b"), "main", "default"); s != "a" || l != "b" {
		t.Fatalf("Lane = %s/%s, want a/b", s, l)
	}
	if p := Priority(ctx, 100); p != 100 {
		t.Fatalf("Priority of a bare context = %d", p)
	}
	if p := Priority(WithPriority(ctx, 0), 100); p != 0 {
		t.Fatalf("Priority 0 = %d (an explicit zero must be kept)", p)
	}
	if NoLease(ctx) || !NoLease(WithoutLease(ctx)) {
		t.Fatal("NoLease does not follow WithoutLease")
	}
}

type otherDriver struct{}

func (otherDriver) Open(string) (driver.Conn, error) { return nil, driver.ErrSkip }

// Find knows only the drivers a finder recognises.
func TestFind(t *testing.T) {
	if _, ok := Find(otherDriver{}); ok {
		t.Fatal("Find recognised a driver no finder knows")
	}
}
