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
// gives it), or a bare sqlite3.ErrorCode or sqlite3.ExtendedErrorCode,
// which ncruces returns for some errors of its own (INTERRUPT when the
// context ended, MISUSE).
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
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch v := e.(type) {
		case sqlite3.ErrorCode:
			return sqlbase.ErrorCode{Code: int(v), Extended: int(v), Message: v.Error(), Err: v}, true
		case sqlite3.ExtendedErrorCode:
			return sqlbase.ErrorCode{Code: int(v) & 0xff, Extended: int(v), Message: v.Error(), Err: v}, true
		}
	}
	return sqlbase.ErrorCode{}, false
}
