package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kind classifies a domain failure; each surface names it in its own code (kindCodes).
type Kind int

// The kinds of domain failure.
const (
	KindInternal        Kind = iota // a bug or an unexpected failure; details go to the log only
	KindInvalid                     // the input breaks a rule
	KindNotFound                    // the addressed record does not exist
	KindConflict                    // the input contradicts the stored state
	KindUnauthenticated             // no valid credentials
	KindForbidden                   // valid credentials, not permitted
	KindPrecondition                // the client's If-Match names a version that is no longer current
	KindExhausted                   // the client has more requests under way than it may; it may retry
)

// Error is the one error type of the domain. Message is safe to show to a client;
// Fields, when set, holds per-field validation problems keyed by the field's JSON name.
type Error struct {
	Kind    Kind
	Message string
	Fields  map[string][]string
}

func (e *Error) Error() string { return e.Message }

// asError returns err as a domain *Error; anything else is an internal failure whose
// message must not reach the client.
func asError(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return &Error{Kind: KindInternal, Message: "internal server error"}
}

func notFound(format string, args ...any) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// invalidFields reports validation problems per field; the message lists them all, so
// surfaces without a structured form (gRPC, GraphQL messages) still say everything.
func invalidFields(fields map[string][]string) *Error {
	names := slices.Sorted(maps.Keys(fields))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + " " + strings.Join(fields[name], ", ")
	}
	return &Error{Kind: KindInvalid, Message: "invalid input: " + strings.Join(parts, "; "), Fields: fields}
}
