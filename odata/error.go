package odata

import (
	"errors"
	"fmt"
	"strconv"
)

// Error is a bad query: a syntax error, an unknown name, a type mismatch, an
// option the route does not allow, a limit exceeded or a malformed query
// string. Pos is the 0-based byte offset of the problem in the
// (percent-decoded) value of Option or, when Option is empty, in the raw
// query string. Services answer it with HTTP 400 and the body from errorBody.
type Error struct {
	Option string // "$filter", "$top", ...; empty for the query string as a whole
	Pos    int
	Msg    string
	// Status is the HTTP status of the answer when it is not 400: 406 for a
	// format the service does not produce.
	Status int
}

// Error returns the message; it always ends in " at position N".
func (e *Error) Error() string {
	s := e.Msg
	if e.Option != "" {
		s = e.Option + ": " + s
	}
	return s + " at position " + strconv.Itoa(e.Pos)
}

// errorBody renders err as the OData JSON error body
// {"error":{"code":"BadRequest","message":"..."}}.
func errorBody(err error) []byte {
	b := []byte(`{"error":{"code":"BadRequest","message":`)
	b = appendString(b, err.Error())
	return append(b, "}}"...)
}

// asError reports whether err is (or wraps) an *Error and returns it.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

func errorf(pos int, msg string) *Error { return &Error{Pos: pos, Msg: msg} }

// failf raises a query error at pos, which run turns into a returned one.
func failf(pos int, format string, args ...any) { panic(errorf(pos, fmt.Sprintf(format, args...))) }
