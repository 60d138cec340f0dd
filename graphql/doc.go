// Package graphql implements GraphQL as specified by the GraphQL
// specification, October 2021 edition: lexing and parsing of executable and
// type-system documents, schemas built from SDL, validation, execution,
// introspection, and a handler for the GraphQL over HTTP specification.
//
// The package knows nothing of where data comes from. A service builds a
// Schema from SDL and binds Go functions to it:
//
//	s, err := graphql.ParseSchema(sdl)
//	s.SetResolver("Query", "user", func(p graphql.ResolveParams) (any, error) {
//		return store.User(p.Args["id"].(int)) // a map[string]any, or nil
//	})
//	s.SetScalar("DateTime", graphql.ScalarFuncs{Serialize: ...})
//	s.SetNotifyingSubscriber("onUserCreated", func(p graphql.ResolveParams, notify func()) (graphql.EventQueue, error) { ... })
//	http.Handle("/graphql", graphql.NewHandler(s))
//
// Fields without a resolver read their value from a map[string]any source
// by field name. Argument values arrive coerced: Int as int, Float as
// float64, String and ID as string, Boolean as bool, enums as their name,
// input objects as map[string]any, lists as []any.
//
// Errors. A resolver error becomes a field error whose message is the
// error's text; if the error (or one it wraps) implements ExtendedError its
// extensions are used, so NewError("NOT_FOUND", "user 4 not found") gives
// extensions.code NOT_FOUND. A resolver panic is recovered and becomes
// "internal server error" with code INTERNAL_SERVER_ERROR. Parse errors,
// and the limits counted while parsing (see Limits), have code
// GRAPHQL_PARSE_FAILED; validation errors and the other limits
// GRAPHQL_VALIDATION_FAILED; variable and operation-name errors
// BAD_USER_INPUT. An operation whose estimated cost is over Limits.MaxCost
// is refused before it runs with COST_LIMIT_EXCEEDED (see cost.go), and an
// execution whose answer outgrows Limits.MaxResponseBytes stops with
// RESPONSE_TOO_LARGE and data null. Over HTTP, a request refused before any
// operation runs (malformed, too large, wrong method or media type) has
// BAD_USER_INPUT, and automatic persisted queries answer
// PERSISTED_QUERY_NOT_FOUND, PERSISTED_QUERY_NOT_SUPPORTED and
// PERSISTED_QUERY_HASH_MISMATCH (see persisted.go).
//
// Every query text is parsed, checked against Schema.Limits and validated;
// a valid document is kept, for the next request with the same text, in a
// cache bounded in bytes and shared by all goroutines (see cache.go). The
// Handler also keeps, by their SHA-256, the queries of Apollo's automatic
// persisted queries, in a cache of its own (see persisted.go).
package graphql
