package api

import (
	"context"
	"database/sql"
	"log/slog"
	"reflect"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cleocode/cleolease/lease"
)

type testMigrator struct{}

func (testMigrator) Migrate(context.Context, *sql.DB) error { return nil }

// Rebase copies every field but BaseDriver: a field added to Config and
// forgotten there fails this test.
func TestRebaseCopiesEveryField(t *testing.T) {
	src := &Config[int]{}
	v := reflect.ValueOf(src).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.CanSet() {
			continue // explicit, checked below
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		}
	}
	src.TTL, src.Wait = time.Second, time.Minute
	src.MigrationsFS = fstest.MapFS{"1_a.up.sql": {}}
	src.Migrator = testMigrator{}
	src.Logger = slog.Default()
	src.Clock = lease.SystemClock{}
	src.explicit = true
	dst := Rebase(src, "base")
	if dst.BaseDriver != "base" || !dst.explicit {
		t.Fatalf("Rebase: BaseDriver %q explicit %v", dst.BaseDriver, dst.explicit)
	}
	dv := reflect.ValueOf(dst).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "BaseDriver" || !v.Field(i).CanInterface() {
			continue
		}
		if !reflect.DeepEqual(v.Field(i).Interface(), dv.FieldByName(name).Interface()) {
			t.Errorf("Rebase lost field %s: %v, want %v", name, dv.FieldByName(name).Interface(), v.Field(i).Interface())
		}
	}
	if v.NumField() != dv.NumField() {
		t.Fatalf("field count %d vs %d", v.NumField(), dv.NumField())
	}
}
