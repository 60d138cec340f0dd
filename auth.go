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

// Who may do what (docs/authentication.md): with a key configured, every write on
// every surface needs a valid token with the "write" scope and gRPC's user reads
// (grpcAccess) a valid token. With -auth-reads, every read of stored data needs a
// valid token too; health checks and the schemas stay open. Without a key, everything
// is open.

// access is what a call needs from its caller.
type access int

const (
	accessOpen  access = iota // no token needed
	accessToken               // any valid token
	accessWrite               // a valid token whose scope contains writeScope
)

const writeScope = "write"

// authenticator checks bearer tokens against the configured key; nil means
// authentication is off, and its methods let everything pass.
type authenticator struct {
	verifier *jwt.Verifier
	reads    bool // every read needs a valid token (-auth-reads)
}

// readAccess is what a read of stored data needs.
func (a *authenticator) readAccess() access {
	if a != nil && a.reads {
		return accessToken
	}
	return accessOpen
}

// caller is who made a request, as far as authentication found out: the token's
// subject. The logging layers put an empty one in the context and log what
// authentication recorded in it.
type caller struct {
	sub atomic.Pointer[string]
}

type callerKey struct{}

func withCaller(ctx context.Context) (context.Context, *caller) {
	c := &caller{}
	return context.WithValue(ctx, callerKey{}, c), c
}

// subjectAttrs is the log attribute naming the caller, when authentication found one.
func subjectAttrs(c *caller) []slog.Attr {
	if c == nil {
		return nil
	}
	if sub := c.sub.Load(); sub != nil && *sub != "" {
		return []slog.Attr{slog.String("sub", *sub)}
	}
	return nil
}

// authorize checks the authorization value for a call that needs need, records the
// token's subject as the caller's and returns the token's claims (nil when need asks
// for no token). A missing or invalid token is KindUnauthenticated, a valid token
// without the scope KindForbidden.
func (a *authenticator) authorize(ctx context.Context, authorization string, need access) (*jwt.Claims, error) {
	if a == nil || need == accessOpen {
		return nil, nil
	}
	token, err := BearerToken(authorization)
	var claims *jwt.Claims
	if err == nil {
		claims, err = a.verifier.Verify(token)
	}
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
	switch {
	case !errors.As(err, &e):
	case e.Kind == KindForbidden:
		return `Bearer error="insufficient_scope", scope="` + writeScope + `"`
	case e.Kind == KindUnauthenticated && r.Header.Get("Authorization") != "":
		return `Bearer error="invalid_token", error_description=` + quotedString(e.Message)
	case e.Kind == KindUnauthenticated:
		return "Bearer"
	}
	return ""
}

// quotedString writes s as an RFC 9110 quoted-string: a backslash and a double quote
// escaped; a control character, which no quoted-string may hold and which would
// end or split the header, becomes a space.
func quotedString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == 0x7f:
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// denied answers a caller without the access need with refuse and reports true; for
// everyone else it answers nothing and reports false.
func (s *Server) denied(w http.ResponseWriter, r *http.Request, need access, refuse func(http.ResponseWriter, *http.Request, error)) bool {
	if s.opts.auth == nil || need == accessOpen {
		return false
	}
	authorization, err := authorizationHeader(r)
	if err == nil {
		_, err = s.opts.auth.authorize(r.Context(), authorization, need)
	}
	if err == nil {
		return false
	}
	w.Header().Set("WWW-Authenticate", challenge(r, err))
	refuse(w, r, err)
	return true
}

// BearerToken extracts the token from an "authorization" HTTP header or gRPC metadata
// value: "Bearer" (any case), one or more spaces, a non-empty token without white
// space (RFC 6750 section 2.1), then white space that HTTP strips anyway, so every
// surface reads it alike. "" is jwt.ErrMissing (a bare challenge), the rest jwt.ErrMalformed.
func BearerToken(authorization string) (string, error) {
	if authorization == "" {
		return "", &jwt.Error{Kind: jwt.ErrMissing}
	}
	scheme, token, found := strings.Cut(authorization, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", &jwt.Error{Kind: jwt.ErrMalformed, Detail: "authorization scheme is not Bearer"}
	}
	token = strings.TrimLeft(strings.TrimRight(token, " \t"), " ")
	if !found || token == "" {
		return "", &jwt.Error{Kind: jwt.ErrMalformed, Detail: "authorization has no bearer token"}
	}
	if strings.ContainsFunc(token, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
		return "", &jwt.Error{Kind: jwt.ErrMalformed, Detail: "authorization must be Bearer, a space, then the token"}
	}
	return token, nil
}

// authorizationHeader returns r's Authorization header, "" when there is none.
func authorizationHeader(r *http.Request) (string, error) {
	return oneAuthorization(r.Header["Authorization"], "more than one Authorization header")
}

// oneAuthorization is the one value of values, "" for none. Two or more are refused
// as KindUnauthenticated with message: a proxy in front may have checked another.
func oneAuthorization(values []string, message string) (string, error) {
	if len(values) > 1 {
		return "", &Error{Kind: KindUnauthenticated, Message: message}
	}
	return strings.Join(values, ""), nil
}
