package core

import (
	"database/sql/driver"
	"io"
	"reflect"
)

// bufferedRows are the rows of a write issued through Query, read to the
// end before the write commits and its lease is released, so that rows the
// caller never closes cannot keep the lane or the write hostage. SQLite
// computes every RETURNING row during the statement's first step anyway;
// the copy here costs the same memory again until the rows are closed.
type bufferedRows struct {
	cols     []string
	scan     []reflect.Type
	dbType   []string
	nullable []bool
	nullOK   []bool
	rows     [][]driver.Value
	err      error // returned after the rows, as the inner Next returned it
	next     int
}

var (
	_ driver.Rows                           = (*bufferedRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*bufferedRows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*bufferedRows)(nil)
	_ driver.RowsColumnTypeNullable         = (*bufferedRows)(nil)
)

// bufferRows reads rows to the end and closes them. A failing Next ends
// the buffer: its error is returned here (so the write rolls back) and
// again by the buffer's Next after the rows before it, where go-sqlite3
// would have returned it.
func bufferRows(rows driver.Rows) (*bufferedRows, error) {
	b := &bufferedRows{cols: rows.Columns()}
	n := len(b.cols)
	b.scan = make([]reflect.Type, n)
	b.dbType = make([]string, n)
	b.nullable = make([]bool, n)
	b.nullOK = make([]bool, n)
	for i := range n {
		b.scan[i] = reflect.TypeFor[any]()
		if t, ok := rows.(driver.RowsColumnTypeScanType); ok {
			b.scan[i] = t.ColumnTypeScanType(i)
		}
		if t, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
			b.dbType[i] = t.ColumnTypeDatabaseTypeName(i)
		}
		if t, ok := rows.(driver.RowsColumnTypeNullable); ok {
			b.nullable[i], b.nullOK[i] = t.ColumnTypeNullable(i)
		}
	}
	for {
		dest := make([]driver.Value, n)
		err := rows.Next(dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.err = err
			break
		}
		for i, v := range dest {
			if p, ok := v.([]byte); ok && p != nil {
				dest[i] = append([]byte{}, p...) // the driver may reuse its buffer
			}
		}
		b.rows = append(b.rows, dest)
	}
	if err := rows.Close(); err != nil && b.err == nil {
		b.err = err
	}
	return b, b.err
}

func (b *bufferedRows) Columns() []string { return b.cols }

func (b *bufferedRows) Close() error {
	b.rows, b.next = nil, 0
	b.err = nil
	return nil
}

func (b *bufferedRows) Next(dest []driver.Value) error {
	if b.next >= len(b.rows) {
		if b.err != nil {
			return b.err
		}
		return io.EOF
	}
	copy(dest, b.rows[b.next])
	b.rows[b.next] = nil
	b.next++
	return nil
}

func (b *bufferedRows) ColumnTypeScanType(i int) reflect.Type   { return b.scan[i] }
func (b *bufferedRows) ColumnTypeDatabaseTypeName(i int) string { return b.dbType[i] }
func (b *bufferedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	return b.nullable[i], b.nullOK[i]
}
