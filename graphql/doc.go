// Package graphql implements GraphQL (the October 2021 specification): parsing,
// schemas built from SDL, validation, execution, introspection, and a handler
// for the GraphQL over HTTP specification and for subscriptions over WebSocket.
//
// A service builds a Schema from SDL and binds Go functions to it
// (SetResolver, SetScalar, SetNotifyingSubscriber); a field without a resolver reads its
// value from a map[string]any source by name. Arguments arrive coerced: Int as
// int, Float as float64, String and ID as string, enums as their name, input
// objects as map[string]any, lists as []any.
//
//	s, err := graphql.ParseSchema(sdl)
//	s.SetResolver("Query", "user", func(p graphql.ResolveParams) (any, error) {
//		return store.User(p.Args["id"].(int)) // a map[string]any, or nil
//	})
//	s.SetScalar("DateTime", graphql.ScalarFuncs{Serialize: ...})
//	s.SetNotifyingSubscriber("onUserCreated", func(p graphql.ResolveParams, notify func()) (graphql.EventQueue, error) { ... })
//	http.Handle("/graphql", graphql.NewHandler(s))
//
// Errors carry extensions.code: a resolver's error its own if it has one (see
// ExtendedError, NewError), a recovered panic INTERNAL_SERVER_ERROR, parse
// errors and the limits counted while parsing GRAPHQL_PARSE_FAILED, validation
// and the other limits GRAPHQL_VALIDATION_FAILED, bad variables and requests
// refused over HTTP BAD_USER_INPUT, an operation over Limits.MaxCost
// COST_LIMIT_EXCEEDED before it runs, an answer over Limits.MaxResponseBytes
// RESPONSE_TOO_LARGE, and automatic persisted queries Apollo's codes.
//
// A valid document is kept, by its text, in a cache bounded in bytes.
package graphql
