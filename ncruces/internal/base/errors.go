package base

import (
	"errors"
	"syscall"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

func init() { sqlbase.RegisterErrors(ReadError) }

// ReadError returns the sqlbase.ErrorCode of ncruces's error inside err's
// chain, and false when there is none: a *sqlite3.Error (Code, Extended
// from its ExtendedCode, Errno from the operating system's error it wraps
// when SQLite reported one: sqlite3_system_errno, as ncruces's Unwrap
// gives it), or a bare sqlite3.ExtendedErrorCode or sqlite3.ErrorCode,
// which ncruces returns whenever SQLite gave no message beyond the code's
// own (SQLITE_BUSY's "database is locked", SQLITE_READONLY, INTERRUPT when
// the context ended, MISUSE). The chain includes the errors an
// errors.Join holds: ncruces's statements return the error of their step
// joined with that of clearing their bindings.
func ReadError(err error) (sqlbase.ErrorCode, bool) {
	var se *sqlite3.Error
	if errors.As(err, &se) && se != nil {
		c := sqlbase.ErrorCode{Code: int(se.Code()), Extended: int(se.ExtendedCode()), Message: se.Error(), Err: se}
		var errno syscall.Errno
		if errors.As(se.Unwrap(), &errno) {
			c.Errno = errno
		}
		return c, true
	}
	return bareCode(err)
}

// bareCode returns the first sqlite3.ErrorCode or
// sqlite3.ExtendedErrorCode in err's tree, in errors.As's order.
func bareCode(err error) (sqlbase.ErrorCode, bool) {
	switch v := err.(type) {
	case sqlite3.ErrorCode:
		return sqlbase.ErrorCode{Code: int(v), Extended: int(v), Message: v.Error(), Err: v}, true
	case sqlite3.ExtendedErrorCode:
		return sqlbase.ErrorCode{Code: int(v) & 0xff, Extended: int(v), Message: v.Error(), Err: v}, true
	case interface{ Unwrap() error }:
		return bareCode(v.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range v.Unwrap() {
			if c, ok := bareCode(e); ok {
				return c, true
			}
		}
	}
	return sqlbase.ErrorCode{}, false
}
