package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"quartet/internal/jwt"
)

// jwtNow is the fixed clock of the verifier tests here.
var jwtNow = time.Unix(1_900_000_000, 0).UTC()

func jwtClock() time.Time { return jwtNow }

// jwtAt returns jwtNow+offset as NumericDate text.
func jwtAt(offset time.Duration) string {
	return fmt.Sprint(jwtNow.Add(offset).Unix())
}

// jwtLeeway is the clock skew the verifier tolerates past a token's exp: the
// distance from exp to ValidUntil.
var jwtLeeway = new(jwt.Verifier).ValidUntil(&jwt.Claims{}).Sub(time.Time{})

// jwtSign returns a compact HS256 JWS of raw header and payload JSON, so that
// a test can send tokens jwt.SignHS256 would never mint.
func jwtSign(t testing.TB, secret []byte, header, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(input))
	return input + "." + enc.EncodeToString(mac.Sum(nil))
}

// jwtTamper flips one bit in the middle of the signature segment.
func jwtTamper(t testing.TB, token string) string {
	t.Helper()
	i := strings.LastIndexByte(token, '.')
	sig, err := base64.RawURLEncoding.DecodeString(token[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	sig[len(sig)/2] ^= 1
	return token[:i+1] + base64.RawURLEncoding.EncodeToString(sig)
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", ""},
		{"bearer abc", "abc", ""},
		{"BEARER abc", "abc", ""},
		{"Bearer a~b+c/d=", "a~b+c/d=", ""},
		{"", "", "token missing"},
		{"Bearer", "", "token malformed: authorization has no bearer token"},
		{"Bearer ", "", "token malformed: authorization has no bearer token"},
		{"Bearer  abc", "abc", ""}, // "Bearer" 1*SP b64token
		{"Bearer   ", "", "token malformed: authorization has no bearer token"},
		{"Bearer abc \t", "abc", ""}, // trailing OWS, as HTTP drops it (RFC 9110 section 5.5): gRPC and payloads alike
		{"Bearer abc def", "", "token malformed: authorization must be Bearer, a space, then the token"},
		{"Bearer abc\tdef", "", "token malformed: authorization must be Bearer, a space, then the token"},
		{"Bearer ab\u00e9", "", "token malformed: authorization must be Bearer, a space, then the token"},
		{"Bearer\tabc", "", "token malformed: authorization scheme is not Bearer"},
		{" Bearer abc", "", "token malformed: authorization scheme is not Bearer"},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", "", "token malformed: authorization scheme is not Bearer"},
		{"Bearerabc", "", "token malformed: authorization scheme is not Bearer"},
		{"abc.def.ghi", "", "token malformed: authorization scheme is not Bearer"},
	}
	for _, tt := range tests {
		got, err := BearerToken(tt.in)
		if tt.wantErr == "" {
			if err != nil || got != tt.want {
				t.Errorf("BearerToken(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("BearerToken(%q) error = %v, want %q", tt.in, err, tt.wantErr)
		}
		var te *jwt.Error
		if !errors.As(err, &te) {
			t.Errorf("BearerToken(%q) error is %T, not *jwt.Error", tt.in, err)
		}
		if got != "" {
			t.Errorf("BearerToken(%q) returned %q with an error", tt.in, got)
		}
	}
	if _, err := BearerToken(""); !errors.Is(err, jwt.ErrMissing) {
		t.Errorf("BearerToken(\"\") = %v, want jwt.ErrMissing", err)
	}
}

// TestBearerThenVerify: the two steps every surface takes with an authorization value.
func TestBearerThenVerify(t *testing.T) {
	secret := []byte(testSecret)
	v, err := jwt.New(jwt.Config{Secret: secret, Now: jwtClock})
	if err != nil {
		t.Fatal(err)
	}
	live := jwtSign(t, secret, `{"alg":"HS256"}`, `{"sub":"alice","scope":"write","exp":`+jwtAt(time.Hour)+`}`)
	dead := jwtSign(t, secret, `{"alg":"HS256"}`, `{"sub":"alice","exp":`+jwtAt(-time.Hour)+`}`)
	tests := []struct {
		in       string
		wantKind error
	}{
		{"Bearer " + live, nil},
		{"bearer " + live, nil},
		{"", jwt.ErrMissing},
		{"Basic " + live, jwt.ErrMalformed},
		{"Bearer  " + live, nil},
		{"Bearer " + dead, jwt.ErrExpired},
		{"Bearer " + jwtTamper(t, live), jwt.ErrSignature},
	}
	for _, tt := range tests {
		token, err := BearerToken(tt.in)
		var c *jwt.Claims
		if err == nil {
			c, err = v.Verify(token)
		}
		if tt.wantKind == nil {
			if err != nil || c.Subject != "alice" || !c.HasScope("write") {
				t.Errorf("BearerToken+Verify(%.20q...) = %+v, %v", tt.in, c, err)
			}
			continue
		}
		if !errors.Is(err, tt.wantKind) || c != nil {
			t.Errorf("BearerToken+Verify(%.20q...) = %+v, %v; want %v", tt.in, c, err, tt.wantKind)
		}
	}
}

func TestAuthorizationHeader(t *testing.T) {
	tests := []struct {
		name    string
		header  http.Header
		want    string
		wantErr bool
	}{
		{"none", http.Header{}, "", false},
		{"one", http.Header{"Authorization": {"Bearer a"}}, "Bearer a", false},
		{"two", http.Header{"Authorization": {"Bearer a", "Bearer b"}}, "", true},
		{"two, one empty", http.Header{"Authorization": {"", "Bearer b"}}, "", true},
	}
	for _, tt := range tests {
		got, err := authorizationHeader(&http.Request{Header: tt.header})
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s: %q, %v; want %q, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
		if e, ok := errors.AsType[*Error](err); err != nil && (!ok || e.Kind != KindUnauthenticated) {
			t.Errorf("%s: error %v is not KindUnauthenticated", tt.name, err)
		}
	}
}

// TestRESTAuthOdds sends what an audit found accepted: a write with two
// Authorization headers (sent on the wire in different letter cases, which net/http
// joins under one name) and writes with tokens naming no subject. Each is 401 and
// stores nothing.
func TestRESTAuthOdds(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	a, _ := startApp(t, cfg)
	signed := func(payload string) string {
		return "Bearer " + jwtSign(t, []byte(testSecret), `{"alg":"HS256"}`, payload)
	}
	good := "Bearer " + testToken(t, "write")
	tests := []struct {
		name    string
		headers []string // raw header lines
	}{
		{"two headers", []string{"Authorization: " + good, "authorization: Bearer x"}},
		{"two good headers", []string{"Authorization: " + good, "AUTHORIZATION: " + good}},
		{"no sub", []string{"Authorization: " + signed(`{"scope":"write","exp":`+jwtAt(time.Hour)+`}`)}},
		{"empty sub", []string{"Authorization: " + signed(`{"sub":"","scope":"write","exp":`+jwtAt(time.Hour)+`}`)}},
	}
	before := len(a.store.Users())
	for _, tt := range tests {
		body := `{"name":"Zoe","email":"zoe@example.com"}`
		req := "POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n" +
			strings.Join(tt.headers, "\r\n") + fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp := rawHTTP(t, a.httpAddr, req)
		if !strings.HasPrefix(resp, "HTTP/1.1 401 ") || !strings.Contains(strings.ToLower(resp), "www-authenticate: bearer") {
			t.Errorf("%s: got\n%s", tt.name, resp)
		}
	}
	if n := len(a.store.Users()); n != before {
		t.Errorf("%d users stored by refused writes", n-before)
	}
}

// rawHTTP sends req as is on a new connection and returns everything the server
// writes until it closes the connection.
func rawHTTP(t *testing.T, addr, req string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hang fails the test instead of blocking it
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading the answer: %v (got %q)", err, resp)
	}
	return string(resp)
}

// TestChallengeQuotesTheDescription: error_description is an RFC 9110 quoted-string
// whatever the message holds: a backslash and a double quote escaped, and no control
// character, which would end or split the header, reaches it.
func TestChallengeQuotesTheDescription(t *testing.T) {
	r := httptest.NewRequest("GET", "/api/users", nil)
	r.Header.Set("Authorization", "Bearer x")
	for _, tt := range []struct{ message, want string }{
		{"token expired", `"token expired"`},
		{`say "hi"`, `"say \"hi\""`},
		{`a\b`, `"a\\b"`},
		{`\"`, `"\\\""`},
		{"line\r\nX-Injected: 1", `"line  X-Injected: 1"`},
		{"nul\x00tab\tdel\x7f", `"nul tab del "`},
		{"e-mail ü", `"e-mail ü"`},
		{"", `""`},
	} {
		got := challenge(r, &Error{Kind: KindUnauthenticated, Message: tt.message})
		if want := `Bearer error="invalid_token", error_description=` + tt.want; got != want {
			t.Errorf("message %q: %s, want %s", tt.message, got, want)
		}
	}
}
