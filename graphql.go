package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"quartet/graphql"
	"quartet/graphql/editor"
	"quartet/internal/admission"
	"quartet/internal/cors"
	"quartet/internal/jwt"
)

// The GraphQL surface (docs/graphql.md): schema.graphql bound to the store by the
// resolvers below.

//go:embed schema.graphql
var schemaSDL string

// subscriptionBuffer is how many events a subscriber may fall behind before it is cut
// off with an error (the store never waits for a reader).
const subscriptionBuffer = 256

// authorizationKey carries a GraphQL request's graphqlAuthorization in its context:
// the one Authorization value, or why there was none to use.
type authorizationKey struct{}

type graphqlAuthorization struct {
	header string
	err    error
}

// authorizeGraphQL applies the rule need to the caller of the GraphQL request in ctx
// and returns the claims of the token that passed (nil when need asked for none).
func authorizeGraphQL(ctx context.Context, auth *authenticator, need access) (*jwt.Claims, error) {
	if auth == nil || need == accessOpen {
		return nil, nil
	}
	a, _ := ctx.Value(authorizationKey{}).(graphqlAuthorization)
	if a.err != nil {
		return nil, a.err
	}
	return auth.authorize(ctx, a.header, need)
}

// codedError is a domain error as GraphQL shows it (a graphql.ExtendedError): its
// message, its kind as extensions.code, and its fields' problems as extensions.fields.
type codedError struct{ err *Error }

func (e codedError) Error() string { return e.err.Message }
func (e codedError) Unwrap() error { return e.err }

func (e codedError) Extensions() map[string]any {
	ext := map[string]any{"code": kindCodes[e.err.Kind].graphql}
	if len(e.err.Fields) > 0 {
		ext["fields"] = e.err.Fields
	}
	return ext
}

// writeGraphQLError answers a domain error refused before GraphQL runs (a full
// queue) as GraphQL over HTTP answers a request it does not run.
func writeGraphQLError(w http.ResponseWriter, _ *http.Request, err error) {
	graphql.WriteError(w, kindCodes[asError(err).Kind].http, graphqlError(err))
}

// graphqlError is err with its extensions when it is a domain error.
func graphqlError(err error) error {
	if e, ok := errors.AsType[*Error](err); ok {
		return codedError{e}
	}
	return err
}

// newGraphQLSchema builds the executable schema over store; mutations need the write
// scope when auth is on.
func newGraphQLSchema(store *Store, auth *authenticator, log *slog.Logger, maxDepth int) *graphql.Schema {
	parsed, err := graphql.ParseSchema(schemaSDL)
	if err != nil {
		panic("schema.graphql: " + err.Error()) // embedded and tested: a build defect
	}
	schema := resolverGuard{parsed, log}
	schema.Limits.MaxDepth = maxDepth
	schema.ShareEventResults = true // nothing under Subscription depends on who asks
	schema.OnPanic = func(ctx context.Context, v any) {
		log.Error("panic in a graphql resolver", "panic", v)
	}
	schema.SetScalar("DateTime", graphql.ScalarFuncs{
		Serialize: func(v any) (any, error) {
			t, ok := v.(time.Time)
			if !ok { // the value's Go type would mean nothing to a client
				return nil, errors.New("DateTime cannot represent a value that is not a time")
			}
			return t.UTC().Format(time.RFC3339Nano), nil
		},
		ParseValue: parseDateTime,
		ParseLiteral: func(v *graphql.Value) (any, error) {
			if v.Kind != graphql.StringValue {
				return nil, errors.New("DateTime must be an RFC 3339 string")
			}
			return parseDateTime(v.Raw)
		},
	})
	bindQuery(schema, store, auth)
	bindMutation(schema, store, auth)
	bindSubscription(schema, store, auth)
	bindUser(schema, store)
	bindPost(schema, store)
	bindComment(schema)
	return schema.Schema
}

// guard puts fn behind the rule need of docs/authentication.md.
func guard(auth *authenticator, need access, fn graphql.ResolveFunc) graphql.ResolveFunc {
	if auth == nil || need == accessOpen {
		return fn
	}
	return func(p graphql.ResolveParams) (any, error) {
		if _, err := authorizeGraphQL(p.Context, auth, need); err != nil {
			return nil, err
		}
		return fn(p)
	}
}

func argID(p graphql.ResolveParams, name string) int64 { return int64(p.Args[name].(int)) }

// found gives a lookup as a nullable result.
func found(v any, ok bool) (any, error) {
	if !ok {
		return nil, nil
	}
	return v, nil
}

// bindQuery binds the root query fields, each behind read access: only a root
// field leads to the fields below.
func bindQuery(schema resolverGuard, store *Store, auth *authenticator) {
	read := func(fn graphql.ResolveFunc) graphql.ResolveFunc { return guard(auth, auth.readAccess(), fn) }
	schema.SetResolver("Query", "users", read(func(graphql.ResolveParams) (any, error) { return store.UserValues(), nil }))
	schema.SetResolver("Query", "user", read(func(p graphql.ResolveParams) (any, error) { return found(store.User(argID(p, "id"))) }))
	schema.SetResolver("Query", "posts", read(func(graphql.ResolveParams) (any, error) { return store.PostValues(), nil }))
	schema.SetResolver("Query", "post", read(func(p graphql.ResolveParams) (any, error) { return found(store.Post(argID(p, "id"))) }))
}

func bindMutation(schema resolverGuard, store *Store, auth *authenticator) {
	write := func(fn graphql.ResolveFunc) graphql.ResolveFunc { return guard(auth, accessWrite, fn) }
	optional := func(p graphql.ResolveParams, name string) *string {
		if v, ok := p.Args[name].(string); ok {
			return &v
		}
		return nil // omitted or null: leave the stored value as it is
	}
	schema.SetResolver("Mutation", "createUser", write(func(p graphql.ResolveParams) (any, error) {
		return store.CreateUser(p.Args["name"].(string), p.Args["email"].(string))
	}))
	schema.SetResolver("Mutation", "updateUser", write(func(p graphql.ResolveParams) (any, error) {
		return store.UpdateUser(argID(p, "id"), UserPatch{Name: optional(p, "name"), Email: optional(p, "email")})
	}))
	schema.SetResolver("Mutation", "deleteUser", write(func(p graphql.ResolveParams) (any, error) { return store.DeleteUser(argID(p, "id")) }))
	schema.SetResolver("Mutation", "createPost", write(func(p graphql.ResolveParams) (any, error) {
		return store.CreatePost(argID(p, "userId"), p.Args["title"].(string), p.Args["content"].(string))
	}))
	schema.SetResolver("Mutation", "addComment", write(func(p graphql.ResolveParams) (any, error) {
		c, err := store.AddAuthoredComment(argID(p, "postId"), argID(p, "authorId"), p.Args["text"].(string))
		if err != nil {
			return nil, err
		}
		return &c, nil
	}))
}

func bindSubscription(schema resolverGuard, store *Store, auth *authenticator) {
	schema.SetNotifyingSubscriber("onUserCreated", subscribe(store, auth, func(v any) bool { _, ok := v.(*User); return ok }))
	schema.SetNotifyingSubscriber("onPostCreated", subscribe(store, auth, func(v any) bool { _, ok := v.(*Post); return ok }))
	// An event that is an error ends the subscription with that error.
	for _, field := range []string{"onUserCreated", "onPostCreated"} {
		schema.SetResolver("Subscription", field, func(p graphql.ResolveParams) (any, error) {
			if err, ok := p.Source.(error); ok {
				return nil, &Error{Kind: KindInternal, Message: err.Error()}
			}
			return p.Source, nil
		})
	}
}

func bindUser(schema resolverGuard, store *Store) {
	user := func(p graphql.ResolveParams) *User { return p.Source.(*User) }
	schema.SetResolver("User", "id", func(p graphql.ResolveParams) (any, error) { return user(p).ID, nil })
	schema.SetResolver("User", "name", func(p graphql.ResolveParams) (any, error) { return user(p).Name, nil })
	schema.SetResolver("User", "email", func(p graphql.ResolveParams) (any, error) { return user(p).Email, nil })
	schema.SetResolver("User", "createdAt", func(p graphql.ResolveParams) (any, error) { return user(p).CreatedAt, nil })
	schema.SetResolver("User", "posts", func(p graphql.ResolveParams) (any, error) {
		limit := -1
		if l, ok := p.Args["limit"].(int); ok {
			if l < 0 {
				return nil, invalid("limit must not be negative, not %d", l)
			}
			limit = l
		}
		return values(store.PostsByUser(user(p).ID, limit)), nil
	})
}

func bindPost(schema resolverGuard, store *Store) {
	post := func(p graphql.ResolveParams) *Post { return p.Source.(*Post) }
	schema.SetResolver("Post", "id", func(p graphql.ResolveParams) (any, error) { return post(p).ID, nil })
	schema.SetResolver("Post", "title", func(p graphql.ResolveParams) (any, error) { return post(p).Title, nil })
	schema.SetResolver("Post", "content", func(p graphql.ResolveParams) (any, error) { return post(p).Content, nil })
	schema.SetResolver("Post", "userId", func(p graphql.ResolveParams) (any, error) { return post(p).UserID, nil })
	schema.SetResolver("Post", "user", func(p graphql.ResolveParams) (any, error) { return found(store.User(post(p).UserID)) })
	schema.SetResolver("Post", "createdAt", func(p graphql.ResolveParams) (any, error) { return post(p).CreatedAt, nil })
	schema.SetResolver("Post", "comments", func(p graphql.ResolveParams) (any, error) {
		// Each with its author, read at once: see AuthoredComment.
		comments := store.AuthoredCommentsOnPost(post(p).ID)
		out := make([]any, len(comments))
		for i := range comments {
			out[i] = &comments[i]
		}
		return out, nil
	})
}

func bindComment(schema resolverGuard) {
	comment := func(p graphql.ResolveParams) *AuthoredComment { return p.Source.(*AuthoredComment) }
	schema.SetResolver("Comment", "id", func(p graphql.ResolveParams) (any, error) { return comment(p).ID, nil })
	schema.SetResolver("Comment", "text", func(p graphql.ResolveParams) (any, error) { return comment(p).Text, nil })
	schema.SetResolver("Comment", "postId", func(p graphql.ResolveParams) (any, error) { return comment(p).PostID, nil })
	schema.SetResolver("Comment", "createdAt", func(p graphql.ResolveParams) (any, error) { return comment(p).CreatedAt, nil })
	schema.SetResolver("Comment", "author", func(p graphql.ResolveParams) (any, error) {
		c := comment(p)
		if c.Author == nil { // the cascade removes a deleted author's comments, so this is a defect
			return nil, fmt.Errorf("comment %d: author %d missing", c.ID, c.AuthorID)
		}
		return c.Author, nil
	})
}

// resolverGuard binds resolvers so that an error other than a domain *Error (a defect,
// whose text may hold internals) is logged and answered as "internal server error".
type resolverGuard struct {
	*graphql.Schema
	log *slog.Logger
}

func (g resolverGuard) SetResolver(typeName, fieldName string, fn graphql.ResolveFunc) {
	g.Schema.SetResolver(typeName, fieldName, func(p graphql.ResolveParams) (any, error) {
		v, err := fn(p)
		if _, domain := errors.AsType[*Error](err); err != nil && !domain {
			g.log.Error("graphql resolver failed", "field", typeName+"."+fieldName, "error", err)
			err = &Error{Kind: KindInternal, Message: "internal server error"}
		}
		return v, graphqlError(err)
	})
}

// subscribe gives a subscription field its source stream: the store's created records
// that want accepts, straight from the store's feed, which calls notify after each.
func subscribe(store *Store, auth *authenticator, want func(any) bool) graphql.NotifyingSubscribeFunc {
	return func(p graphql.ResolveParams, notify func()) (graphql.EventQueue, error) {
		if _, err := authorizeGraphQL(p.Context, auth, auth.readAccess()); err != nil {
			return nil, graphqlError(err)
		}
		sub := store.Subscribe(subscriptionBuffer, want, notify)
		context.AfterFunc(p.Context, sub.Close)
		return sub, nil
	}
}

func parseDateTime(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, errors.New("DateTime must be an RFC 3339 string")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, errors.New("DateTime must be an RFC 3339 string such as 2024-05-01T12:00:00Z")
	}
	return t.UTC(), nil
}

// newGraphQLHandler serves /graphql over HTTP and WebSocket; both pass the caller's
// Authorization on to the guarded resolvers. Over WebSocket it may also come in the
// connection_init payload, since browsers cannot set headers there; with -auth-reads,
// a connection_init without a valid token is refused (close 4403), and the socket is
// closed with 4403 when its token expires. A browser's GET gets the query editor, whose
// grpcurl commands name grpcAddr, the address the gRPC server listens on.
func newGraphQLHandler(schema *graphql.Schema, auth *authenticator, origins cors.Policy, persistedOnly bool, entrance *admission.Door, grpcAddr string, log *slog.Logger) (*graphql.Handler, *graphql.WebSocketHandler) {
	h := graphql.NewHandler(schema)
	h.PersistedOnly = persistedOnly
	h.HTMLPage = editor.Handler(editor.Options{GRPCAddress: grpcAddr}) // GET /graphql from a browser
	h.ContextFunc = func(r *http.Request) context.Context {
		if r.Header.Get("Authorization") == "" {
			return r.Context() // a missing value reads as no header
		}
		header, err := authorizationHeader(r)
		return context.WithValue(r.Context(), authorizationKey{}, graphqlAuthorization{header, err})
	}
	// A WebSocket's connection_init, and an SSE or multipart stream, is admitted by
	// the token it carries.
	admit := func(r *http.Request, payload map[string]any) (context.Context, error) {
		header, err := authorizationHeader(r)
		for _, key := range []string{"Authorization", "authorization"} {
			if v, ok := payload[key].(string); ok {
				header, err = v, nil
			}
		}
		ctx := context.WithValue(r.Context(), authorizationKey{}, graphqlAuthorization{header, err})
		claims, err := authorizeGraphQL(ctx, auth, auth.readAccess())
		if err != nil {
			return nil, graphqlError(err)
		}
		if claims != nil { // the token admitted the socket: its events stop when it would be refused
			ctx = graphql.AuthorizedUntil(ctx, auth.verifier.ValidUntil(claims))
		}
		return ctx, nil
	}
	opts := graphql.WebSocketOptions{
		AllowAnyOrigin: true, // origins.Guard checks first: one origin policy for HTTP and WebSocket
		Log:            log,
		OnInit:         admit,
	}
	if auth != nil {
		opts.Now = auth.verifier.Now // the clock ValidUntil is on
	}
	// A message, and an operation's set-up, takes a slot, as HTTP requests do.
	if entrance.Queue != nil {
		opts.ClientSlot = func(ctx context.Context, client string) (func(), error) {
			release, err := entrance.Slot(ctx, client)
			if refused, ok := err.(*admission.Refused); ok {
				return nil, graphqlError(exhausted(refused))
			}
			return release, err
		}
	}
	opts.Sockets, opts.Operations, opts.Answers = entrance.Sockets, entrance.Operations, entrance.Answers
	opts.ClientOf = func(r *http.Request) string { return admission.Of(r.RemoteAddr) }
	if persistedOnly {
		opts.PersistedOnly = h.PersistedQueries // pinned by start, before the first connection
	}
	ws := graphql.NewWebSocketHandler(schema, opts)
	// Streams over plain HTTP count with the WebSockets, claimed from the same budgets.
	h.Streams = graphql.NewStreams(schema, graphql.StreamOptions{
		Sockets: opts.Sockets, Operations: opts.Operations, Answers: opts.Answers, ClientOf: opts.ClientOf,
		Authorize: admit, Now: opts.Now,
	})
	h.WebSocket = origins.Guard(ws)
	return h, ws
}

// maxGraphQLBatch bounds -graphql-batch-max: a batch runs its operations in turn on
// one request's goroutine.
const maxGraphQLBatch = 100

// maxManifestBytes bounds the persisted query manifest read at start-up.
const maxManifestBytes = 16 << 20

// pinPersistedQueries pins the operations of the Apollo persisted query manifest in
// file (-graphql-persisted-queries), known by hash from the first request.
func (s *Server) pinPersistedQueries(file string, log *slog.Logger) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("-graphql-persisted-queries: %w", unwrapPathError(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return fmt.Errorf("-graphql-persisted-queries: %w", unwrapPathError(err))
	}
	if len(data) > maxManifestBytes {
		return fmt.Errorf("-graphql-persisted-queries: %s is larger than %d bytes", file, maxManifestBytes)
	}
	n, err := s.graphql.PersistedQueries.PinManifest(s.graphql.Schema, data)
	if err != nil {
		return fmt.Errorf("-graphql-persisted-queries %s: %w", file, err)
	}
	log.Info("persisted queries pinned", "file", file, "operations", n, "only", s.graphql.PersistedOnly)
	return nil
}

// graphQLSchema answers GET /graphql/schema.graphql: the SDL /graphql serves.
func (s *Server) graphQLSchema(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(schemaSDL))
}
