package main

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"quartet/userpb"
)

// Who may do what (CONTRACT.md section 6): with a key configured, every write on every
// surface needs a valid token with the "write" scope, gRPC GetUser needs a valid token,
// and everything else stays open. Without a key, everything is open.

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
	verifier *JWTVerifier
}

type claimsKey struct{}

// claimsFrom returns the verified claims a call carries, if any.
func claimsFrom(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok
}

// check verifies the authorization header value for a call that needs need. Failures
// are domain errors: KindUnauthenticated for a missing or invalid token, KindForbidden
// for a valid token without the scope.
func (a *authenticator) check(authorization string, need access) (*Claims, error) {
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
	if need == accessWrite && !claims.HasScope(writeScope) {
		return nil, &Error{Kind: KindForbidden, Message: "the token's scope does not include " + writeScope}
	}
	return claims, nil
}

// authorize checks r's Authorization header for need and returns r with the claims in
// its context.
func (a *authenticator) authorize(r *http.Request, need access) (*http.Request, error) {
	claims, err := a.check(r.Header.Get("Authorization"), need)
	if err != nil || claims == nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), claimsKey{}, claims)), nil
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

// requireWrite wraps a REST write handler with the write rule.
func (s *Server) requireWrite(h http.HandlerFunc) http.HandlerFunc {
	if s.auth == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		r, err := s.auth.authorize(r, accessWrite)
		if err != nil {
			w.Header().Set("WWW-Authenticate", challenge(r, err))
			s.writeError(w, r, err)
			return
		}
		h(w, r)
	}
}

// grpcAccess is what each gRPC method needs; a method not listed is open.
var grpcAccess = map[string]access{
	userpb.UserService_GetUser_FullMethodName:     accessToken,
	userpb.UserService_CreateUsers_FullMethodName: accessWrite,
}

func (a *authenticator) checkGRPC(ctx context.Context, method string) (context.Context, error) {
	need := grpcAccess[method]
	if a == nil || need == accessOpen {
		return ctx, nil
	}
	var authorization string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		switch v := md.Get("authorization"); len(v) {
		case 0:
		case 1:
			authorization = v[0]
		default: // which one would count is anybody's guess: refuse rather than pick
			return ctx, &Error{Kind: KindUnauthenticated, Message: "more than one authorization value"}
		}
	}
	claims, err := a.check(authorization, need)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, claimsKey{}, claims), nil
}

func (a *authenticator) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := a.checkGRPC(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (a *authenticator) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := a.checkGRPC(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &streamWithContext{ServerStream: ss, ctx: ctx})
}

// streamWithContext carries the claims into a stream handler.
type streamWithContext struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *streamWithContext) Context() context.Context { return s.ctx }
