package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Kind classifies a domain failure. Each surface has one table from Kind to its own
// codes (httpStatus in server.go, grpcCode in grpc.go, graphqlCode in graphql.go,
// odataCode in odata.go); the domain knows none of them.
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
	var e *Error
	if errors.As(err, &e) {
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
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, name+" "+strings.Join(fields[name], ", "))
	}
	return &Error{Kind: KindInvalid, Message: "invalid input: " + strings.Join(parts, "; "), Fields: fields}
}
