package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"quartet/internal/jwt"
)

// Who may do what (docs/authentication.md): with a key configured, every write on every
// surface needs a valid token with the "write" scope, gRPC's user reads (GetUser,
// GetAllUsers, grpcAccess in grpc.go) need a valid token, and everything else stays
// open. With -auth-reads, every read of stored data on every surface needs a valid
// token too; health checks and the schemas ($metadata, GraphQL introspection, gRPC
// reflection) stay open. Without a key, everything is open.

// access is what a call needs from its caller.
type access int

const (
	accessOpen  access = iota // no token needed
	accessToken               // any valid token
	accessWrite               // a valid token whose scope contains "write"
)

// writeScope is the scope every write needs.
const writeScope = "write"

// authenticator checks bearer tokens against the configured key. A nil
// *authenticator means authentication is off; its methods then let everything pass.
type authenticator struct {
	verifier *jwt.Verifier
	// reads makes every read need a valid token (-auth-reads).
	reads bool
}

// readAccess is what a read of stored data needs.
func (a *authenticator) readAccess() access {
	if a != nil && a.reads {
		return accessToken
	}
	return accessOpen
}

// caller is who made a request, as far as authentication found out: the token's
// subject (docs/authentication.md: the caller's identity is the sub claim). The logging layers put an
// empty one in the context and print what authentication recorded in it.
type caller struct {
	sub atomic.Pointer[string] // set by check, read by the log line after the call
}

type callerKey struct{}

// withCaller returns ctx carrying a new, empty caller.
func withCaller(ctx context.Context) (context.Context, *caller) {
	c := &caller{}
	return context.WithValue(ctx, callerKey{}, c), c
}

// subject is the authenticated subject, "" when there is none.
func (c *caller) subject() string {
	if s := c.sub.Load(); s != nil {
		return *s
	}
	return ""
}

// check verifies the authorization header value for a call that needs need, and
// records the token's subject as the caller's. Failures are domain errors:
// KindUnauthenticated for a missing or invalid token, KindForbidden for a valid token
// without the scope.
func (a *authenticator) check(ctx context.Context, authorization string, need access) error {
	_, err := a.authorize(ctx, authorization, need)
	return err
}

// authorize is check for a caller that holds on to what the token allowed (a
// WebSocket, until the token expires): it returns the token's claims, nil when
// need asked for no token.
func (a *authenticator) authorize(ctx context.Context, authorization string, need access) (*jwt.Claims, error) {
	if a == nil || need == accessOpen {
		return nil, nil
	}
	token, err := BearerToken(authorization)
	if err != nil {
		return nil, &Error{Kind: KindUnauthenticated, Message: err.Error()}
	}
	claims, err := a.verifier.Verify(token)
	if err != nil {
		return nil, &Error{Kind: KindUnauthenticated, Message: err.Error()}
	}
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		c.sub.Store(&claims.Subject)
	}
	if need == accessWrite && !claims.HasScope(writeScope) {
		return nil, &Error{Kind: KindForbidden, Message: "the token's scope does not include " + writeScope}
	}
	return claims, nil
}

// challenge is the WWW-Authenticate value for an auth failure (RFC 6750 section 3):
// a bare "Bearer" when no token came, the error code when one did.
func challenge(r *http.Request, err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return ""
	}
	switch {
	case e.Kind == KindForbidden:
		return `Bearer error="insufficient_scope", scope="` + writeScope + `"`
	case e.Kind == KindUnauthenticated && r.Header.Get("Authorization") != "":
		return `Bearer error="invalid_token", error_description="` + e.Message + `"`
	case e.Kind == KindUnauthenticated:
		return "Bearer"
	}
	return ""
}

// denied answers a caller without the access need with refuse and reports true; it
// reports false, having answered nothing, for everyone else.
func (s *Server) denied(w http.ResponseWriter, r *http.Request, need access, refuse func(http.ResponseWriter, *http.Request, error)) bool {
	if s.auth == nil || need == accessOpen {
		return false
	}
	authorization, err := authorizationHeader(r)
	if err == nil {
		err = s.auth.check(r.Context(), authorization, need)
	}
	if err == nil {
		return false
	}
	w.Header().Set("WWW-Authenticate", challenge(r, err))
	refuse(w, r, err)
	return true
}

// subjectAttrs is the log attribute naming the caller, when authentication found one.
func subjectAttrs(c *caller) []slog.Attr {
	if c == nil {
		return nil
	}
	if sub := c.subject(); sub != "" {
		return []slog.Attr{slog.String("sub", sub)}
	}
	return nil
}

// BearerToken extracts the token from an "authorization" HTTP header or gRPC
// metadata value. The value must be the scheme "Bearer" (any case), one or
// more spaces, and a non-empty token without whitespace (RFC 6750 section
// 2.1: "Bearer" 1*SP b64token). An empty value reports jwt.ErrMissing, so
// that the caller can omit the error code from its challenge (RFC 6750
// section 3.1); anything else wrong reports jwt.ErrMalformed.
func BearerToken(authorization string) (string, error) {
	if authorization == "" {
		return "", &jwt.Error{Kind: jwt.ErrMissing}
	}
	scheme, token, found := strings.Cut(authorization, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", &jwt.Error{Kind: jwt.ErrMalformed, Detail: "authorization scheme is not Bearer"}
	}
	token = strings.TrimLeft(token, " ")
	if !found || token == "" {
		return "", &jwt.Error{Kind: jwt.ErrMalformed, Detail: "authorization has no bearer token"}
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c >= 0x7f {
			return "", &jwt.Error{Kind: jwt.ErrMalformed, Detail: "authorization must be Bearer, a space, then the token"}
		}
	}
	return token, nil
}

// authorizationHeader returns r's Authorization header, "" when there is none. Two
// or more are refused as KindUnauthenticated: net/http's Header.Get would take the
// first while a proxy in front may have checked another, and gRPC refuses two
// "authorization" metadata values too.
func authorizationHeader(r *http.Request) (string, error) {
	values := r.Header["Authorization"] // net/http canonicalises the name, in any case
	switch len(values) {
	case 0:
		return "", nil
	case 1:
		return values[0], nil
	}
	return "", &Error{Kind: KindUnauthenticated, Message: "more than one Authorization header"}
}
