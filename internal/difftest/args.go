package difftest

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"time"
)

// The argument types database/sql converts before a driver binds them
// (convert.go: named and narrow types, pointers, driver.Valuer), each the
// base's own driver either receives converted or converts itself.
type (
	namedString string
	namedInt    int32
	namedBytes  []byte
	namedFloat  float32
	namedBool   bool
)

// valuer is a driver.Valuer with a value receiver, whose nil pointer
// database/sql binds as NULL.
type valuer struct{ v driver.Value }

func (v valuer) Value() (driver.Value, error) { return v.v, nil }

// ptrValuer is a driver.Valuer with a pointer receiver.
type ptrValuer struct{ s string }

func (v *ptrValuer) Value() (driver.Value, error) { return "ptr:" + v.s, nil }

// ConvertedArgs are the values of the "arguments database/sql converts"
// sequence: unsigned and narrow integers, float32, pointers (set and nil),
// named types, Valuers, time.Time, nil, and the uint64 database/sql
// refuses.
func ConvertedArgs() []any {
	i, s, tm, b := 7, "pointed", Time, true
	return []any{
		uint(1), uint8(2), uint16(3), uint32(4), uint64(5), uint64(1 << 63), int8(-1), int16(-2), int32(-3),
		int(-4), float32(1.5), float64(2.25), true, namedString("named"), namedInt(8), namedBytes("nb"),
		namedFloat(0.5), namedBool(true), &i, &s, &tm, &b, (*int)(nil), (*time.Time)(nil), Time, nil,
		sql.NullString{String: "ns", Valid: true}, sql.NullInt64{}, sql.NullTime{Time: Time, Valid: true},
		valuer{int64(9)}, (*valuer)(nil), &ptrValuer{"p"}, []byte("raw"), json.RawMessage(`{"a":1}`),
		struct{}{}, []int{1},
	}
}

// convertedArgsOps runs every value of ConvertedArgs through Exec and
// Query, unprepared and prepared, outside a transaction and inside one.
func convertedArgsOps() []Op {
	var ops []Op
	each := func() {
		for _, v := range ConvertedArgs() {
			ops = append(ops,
				Seq("query", "SELECT ?1, typeof(?1)", v),
				Seq("prepare-query", "SELECT ?1, typeof(?1)", v),
				Seq("exec", "INSERT INTO ch(pid, note) VALUES (NULL, ?)", v),
				Seq("prepare-exec", "INSERT INTO ch(pid, note) VALUES (NULL, ?)", v),
				Seq("queryrow", "SELECT ?", v),
			)
		}
	}
	each()
	ops = append(ops, Seq("begin", ""))
	each()
	ops = append(ops, Seq("commit", ""), Seq("query", "SELECT rowid, note, typeof(note) FROM ch ORDER BY rowid"))
	return ops
}
