package sqlbase

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// fakeError is a base's error type, as a base's package would read it.
type fakeError struct{ code, extended int }

func (e fakeError) Error() string { return fmt.Sprintf("fake sqlite error %d", e.code) }

func init() {
	RegisterErrors(func(err error) (ErrorCode, bool) {
		var fe fakeError
		if !errors.As(err, &fe) {
			return ErrorCode{}, false
		}
		c := ErrorCode{Code: fe.code, Extended: fe.extended, Message: fe.Error()}
		if fe.extended == 778 { // SQLITE_IOERR_WRITE, as a LiteFS replica refuses
			c.Errno = syscall.EACCES
		}
		return c, true
	})
}

// Code reads a registered base's error anywhere in the chain, and nothing
// else.
func TestCodeReadsRegisteredBases(t *testing.T) {
	wrapped := fmt.Errorf("claim: %w", fakeError{code: Busy, extended: Busy})
	if c, ok := Code(wrapped); !ok || c.Code != Busy || c.Message != "fake sqlite error 5" {
		t.Fatalf("Code(%v) = %+v, %v; want Busy", wrapped, c, ok)
	}
	for _, err := range []error{nil, errors.New("database is locked")} {
		if c, ok := Code(err); ok {
			t.Errorf("Code(%v) = %+v, true; want false (not a base's error)", err, c)
		}
	}
}

func TestIsBusyAndWriteRefused(t *testing.T) {
	for _, tc := range []struct {
		err           error
		busy, refused bool
	}{
		{fakeError{code: Busy}, true, false},
		{fakeError{code: Locked}, true, false},
		{fakeError{code: ReadOnly}, false, true},
		{fakeError{code: IOErr, extended: 778}, false, true},
		{fakeError{code: IOErr, extended: 266}, false, false}, // SQLITE_IOERR_READ, no errno
		{fakeError{code: Full}, false, false},
		{errors.New("attempt to write a readonly database"), false, false},
		{nil, false, false},
	} {
		if got := IsBusy(tc.err); got != tc.busy {
			t.Errorf("IsBusy(%v) = %v, want %v", tc.err, got, tc.busy)
		}
		if got := WriteRefused(tc.err); got != tc.refused {
			t.Errorf("WriteRefused(%v) = %v, want %v", tc.err, got, tc.refused)
		}
	}
}
