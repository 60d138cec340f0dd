package odata

import (
	"errors"
	"fmt"
	"strconv"
)

// Error is a bad query, answered 400 (or Status). Pos is the byte offset of the
// problem in the percent-decoded value of Option or, when Option is empty, in
// the raw query string.
type Error struct {
	Option string // "$filter", "$top", ...; empty for the query string as a whole
	Pos    int
	Msg    string
	Status int // the answer's HTTP status when not 400: 406 for a format not served
}

// Error returns the message; it always ends in " at position N".
func (e *Error) Error() string {
	s := e.Msg
	if e.Option != "" {
		s = e.Option + ": " + s
	}
	return s + " at position " + strconv.Itoa(e.Pos)
}

// asError reports whether err is (or wraps) an *Error and returns it.
func asError(err error) (*Error, bool) { return errors.AsType[*Error](err) }

func errorf(pos int, msg string) *Error { return &Error{Pos: pos, Msg: msg} }

// failf raises a query error at pos, which run turns into a returned one.
func failf(pos int, format string, args ...any) { panic(errorf(pos, fmt.Sprintf(format, args...))) }
