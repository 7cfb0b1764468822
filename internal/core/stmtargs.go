package core

import (
	"database/sql/driver"
	"fmt"
	"reflect"
)

// CheckNamedValue converts one argument of a prepared statement the way
// database/sql converts it for the base's own statement (convert.go,
// driverArgsConnLocked): the base statement's NamedValueChecker, or else
// the base connection's; then, where that skips, the base statement's
// ColumnConverter; driver.ErrSkip where both skip, so that database/sql
// applies its default conversion.
//
// sqlmw's statement always implements NamedValueChecker, and asks the
// statement it wraps (this one) before its connection, so without this
// method a prepared statement's arguments would get the connection's
// check: ncruces's connection accepts every value as it is (its
// statement's check converts them), and its statement then panicked on a
// uint, an int32 or a *time.Time it cannot bind.
func (s *leaseStmt) CheckNamedValue(nv *driver.NamedValue) error {
	nvc, ok := s.Stmt.(driver.NamedValueChecker)
	if !ok {
		nvc, _ = s.lc.Conn.(driver.NamedValueChecker)
	}
	cci, _ := s.Stmt.(driver.ColumnConverter) //nolint:staticcheck // consulted as database/sql does
	if nvc != nil {
		if err := nvc.CheckNamedValue(nv); err != driver.ErrSkip || cci == nil {
			return err
		}
	}
	if cci != nil {
		return convertColumn(cci, s.Stmt.NumInput(), nv)
	}
	return driver.ErrSkip
}

// convertColumn is database/sql's ccChecker.CheckNamedValue: a
// driver.Valuer's value first, then the statement's ColumnConverter for
// the argument's position; want is the statement's NumInput (-1: not
// known). It returns nil without converting an argument past want (the
// count is checked later).
func convertColumn(cci driver.ColumnConverter, want int, nv *driver.NamedValue) error { //nolint:staticcheck // database/sql's contract
	index := nv.Ordinal - 1
	if want <= index {
		return nil
	}
	if vr, ok := nv.Value.(driver.Valuer); ok {
		sv, err := valuerValue(vr)
		if err != nil {
			return err
		}
		if !driver.IsValue(sv) {
			return fmt.Errorf("non-subset type %T returned from Value", sv)
		}
		nv.Value = sv
	}
	arg := nv.Value
	var err error
	nv.Value, err = cci.ColumnConverter(index).ConvertValue(arg)
	if err != nil {
		return err
	}
	if !driver.IsValue(nv.Value) {
		return fmt.Errorf("driver ColumnConverter error converted %T to unsupported type %T", arg, nv.Value)
	}
	return nil
}

// valuerValue is database/sql's callValuerValue: a nil pointer whose Value
// method has a value receiver is NULL rather than a panic.
func valuerValue(vr driver.Valuer) (driver.Value, error) {
	if rv := reflect.ValueOf(vr); rv.Kind() == reflect.Pointer && rv.IsNil() &&
		rv.Type().Elem().Implements(reflect.TypeFor[driver.Valuer]()) {
		return nil, nil
	}
	return vr.Value()
}
