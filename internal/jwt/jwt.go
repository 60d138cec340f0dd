// Package jwt verifies bearer tokens: JWTs (RFC 7519) in the JWS Compact
// Serialization, signed with the algorithm bound to the configured key (HS256 for a
// secret, RS256 for RSA, ES256 for P-256), returning the claims or an *Error safe to
// show the client.
//
// The token never chooses the key ("jku", "x5u", "jwk", "x5c", "kid" are ignored).
// Refused: "alg": "none" or any but the key's; HMAC secrets under 32 bytes, RSA
// keys under 2048 bits; tokens over 8 KiB; duplicate member names (two parsers must
// not read one token differently); "crit"; a "typ" other than JWT or at+jwt, so a
// JWS minted for another purpose is not replayed; "cty": "JWT"; "b64": false.
// "exp" is required, "nbf" and "iat" checked when present, with 60 s of leeway;
// "iss" and "aud" are checked when configured, their types always; "sub" must be a
// non-empty string; scopes come from "scope" alone, space-separated.
package jwt

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"quartet/internal/jsonkeys"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	leeway         = 60 * time.Second // clock skew tolerated on exp, nbf and iat
	maxTokenSize   = 8 << 10
	minHMACKeySize = 32           // RFC 7518 section 3.2
	minRSABits     = 2048         // RFC 7518 section 3.3
	maxNumericDate = 253402300799 // 9999-12-31T23:59:59Z
)

// Kinds of token failure. An *Error wraps exactly one of them, for errors.Is.
var (
	ErrMissing      = errors.New("token missing")
	ErrMalformed    = errors.New("token malformed")
	ErrAlgorithm    = errors.New("token algorithm not accepted")
	ErrHeader       = errors.New("token header not accepted")
	ErrSignature    = errors.New("token signature invalid")
	ErrClaims       = errors.New("token claims invalid")
	ErrExpired      = errors.New("token expired")
	ErrNotYetValid  = errors.New("token not yet valid")
	ErrIssuedFuture = errors.New("token issued in the future")
	ErrIssuer       = errors.New("token issuer not accepted")
	ErrAudience     = errors.New("token audience not accepted")
)

// An Error reports why a token was refused: the kind's text, then a detail
// written by this package or its caller, never copied from the token, so the
// message is safe for the client (and, with no '"' or '\', for an RFC 6750
// error_description).
type Error struct {
	Kind   error  // one of the Err* values
	Detail string // e.g. "payload: exp missing"; may be empty
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Config configures a Verifier: exactly one of Secret and PublicKeyPEM is set.
type Config struct {
	Secret []byte // the HS256 key, at least 32 bytes
	// PublicKeyPEM is one PEM block, "PUBLIC KEY" (PKIX: RSA or EC P-256) or
	// "RSA PUBLIC KEY" (PKCS #1): RSA binds the verifier to RS256, P-256 to ES256.
	PublicKeyPEM []byte
	Issuer       string           // if set, must equal "iss"
	Audience     string           // if set, must be one of "aud"
	Now          func() time.Time // nil means time.Now
}

// A Verifier checks bearer tokens against one key and one algorithm. It is
// safe for concurrent use.
type Verifier struct {
	alg string
	key any    // the secret ([]byte), *rsa.PublicKey or *ecdsa.PublicKey
	cfg Config // with Now set
}

// New returns a verifier for cfg, or an error saying what is wrong with the key.
func New(cfg Config) (*Verifier, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg}
	switch {
	case len(cfg.Secret) > 0 && len(cfg.PublicKeyPEM) > 0:
		return nil, errors.New("jwt: configure either a secret or a public key, not both")
	case len(cfg.Secret) > 0:
		if err := checkSecret(cfg.Secret); err != nil {
			return nil, err
		}
		v.alg, v.key = "HS256", bytes.Clone(cfg.Secret)
	case len(cfg.PublicKeyPEM) > 0:
		var err error
		if v.key, v.alg, err = parsePublicKey(cfg.PublicKeyPEM); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("jwt: no secret or public key configured")
	}
	return v, nil
}

func checkSecret(secret []byte) error {
	if len(secret) < minHMACKeySize {
		return fmt.Errorf("jwt: HS256 secret is %d bytes; at least %d are required (RFC 7518 section 3.2)",
			len(secret), minHMACKeySize)
	}
	return nil
}

// parsePublicKey returns the *rsa.PublicKey or *ecdsa.PublicKey of data, which
// must be exactly one PEM block, and the algorithm it binds.
func parsePublicKey(data []byte) (key any, alg string, err error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, "", errors.New("jwt: public key: no PEM block found")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, "", errors.New("jwt: public key: unexpected data after the first PEM block")
	}
	if len(block.Headers) != 0 {
		return nil, "", fmt.Errorf("jwt: public key: PEM block %q has headers (encrypted keys are not supported)", block.Type)
	}
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
		return nil, "", fmt.Errorf("jwt: public key: PEM block is a %s; configure the public key instead", block.Type)
	default:
		return nil, "", fmt.Errorf("jwt: public key: PEM block type %q; want \"PUBLIC KEY\" or \"RSA PUBLIC KEY\"", block.Type)
	}
	if err != nil {
		return nil, "", fmt.Errorf("jwt: public key: %v", err)
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < minRSABits {
			return nil, "", fmt.Errorf("jwt: public key: RSA modulus is %d bits; at least %d are required (RFC 7518 section 3.3)",
				n, minRSABits)
		}
		return k, "RS256", nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, "", fmt.Errorf("jwt: public key: EC curve %s; only P-256 (ES256) is supported", k.Curve.Params().Name)
		}
		return k, "ES256", nil
	}
	return nil, "", fmt.Errorf("jwt: public key: %T keys are not supported; use RSA (RS256) or EC P-256 (ES256)", key)
}

// ValidUntil is the instant, on the verifier's clock, from which Verify refuses
// the token c came from as expired.
func (v *Verifier) ValidUntil(c *Claims) time.Time { return c.Expiry.Add(leeway) }

// Now is the verifier's clock.
func (v *Verifier) Now() time.Time { return v.cfg.Now() }

// Claims is what a verified token says about its bearer.
type Claims struct {
	Subject   string    // "sub"; never empty once verified
	Issuer    string    // "iss"; empty if absent
	Audience  []string  // "aud", as a list even when sent as a string
	Scopes    []string  // "scope", split at spaces
	ID        string    // "jti"; empty if absent
	Expiry    time.Time // "exp"
	NotBefore time.Time // "nbf"; zero if absent
	IssuedAt  time.Time // "iat"; zero if absent
}

// HasScope reports whether scope is one of the token's scopes.
func (c *Claims) HasScope(scope string) bool { return slices.Contains(c.Scopes, scope) }

// Verify checks token and returns its claims. Every error is a *Error.
func (v *Verifier) Verify(token string) (*Claims, error) {
	if token == "" {
		return nil, &Error{Kind: ErrMissing}
	}
	if len(token) > maxTokenSize {
		return nil, errorf(ErrMalformed, "longer than %d bytes", maxTokenSize)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errorf(ErrMalformed, "want 3 dot-separated segments, found %d", len(parts))
	}
	var seg [3][]byte
	for i, name := range [3]string{"header", "payload", "signature"} {
		// Unpadded base64url only: no '=', no white space (which Go's decoder
		// skips), no non-zero trailing bits.
		p := parts[i]
		for j := 0; j < len(p); j++ {
			if c := p[j]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return nil, errorf(ErrMalformed, "%s: invalid base64url character at offset %d", name, j)
			}
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(p)
		if err != nil {
			return nil, errorf(ErrMalformed, "%s: invalid base64url length or padding bits", name)
		}
		seg[i] = b
	}
	if err := v.checkHeader(seg[0]); err != nil {
		return nil, err
	}
	if !v.verifySignature(token[:len(parts[0])+1+len(parts[1])], seg[2]) {
		return nil, &Error{Kind: ErrSignature}
	}
	// No claim is looked at before the token is authenticated (RFC 8725 section 3.1).
	return v.checkClaims(seg[1])
}

// checkHeader checks that the algorithm is the key's and that no member asks
// for something not supported.
func (v *Verifier) checkHeader(data []byte) error {
	h, err := parseObject(data, "header")
	if err != nil {
		return err
	}
	rawAlg, ok := h["alg"]
	if !ok {
		return errorf(ErrMalformed, "header: alg missing")
	}
	alg, ok := jsonString(rawAlg)
	if !ok {
		return errorf(ErrMalformed, "header: alg is not a string")
	}
	if strings.EqualFold(alg, "none") {
		return errorf(ErrAlgorithm, "unsecured tokens (alg none) are refused")
	}
	if alg != v.alg {
		return errorf(ErrAlgorithm, "want %s", v.alg)
	}
	if _, ok := h["crit"]; ok {
		return errorf(ErrHeader, "crit names an unsupported extension")
	}
	if raw, ok := h["typ"]; ok {
		typ, ok := jsonString(raw)
		if !ok || !isJWTType(typ) {
			return errorf(ErrHeader, "typ must be JWT or at+jwt")
		}
	}
	if raw, ok := h["cty"]; ok {
		cty, ok := jsonString(raw)
		if !ok {
			return errorf(ErrHeader, "cty is not a string")
		}
		if isJWTType(cty) {
			return errorf(ErrHeader, "nested tokens are not supported")
		}
	}
	if raw, ok := h["b64"]; ok && !bytes.Equal(raw, []byte("true")) {
		return errorf(ErrHeader, "unencoded payloads (b64) are not supported")
	}
	return nil
}

// isJWTType reports whether a "typ" or "cty" value names a JWT or a JWT access
// token (RFC 7515 section 4.1.9).
func isJWTType(t string) bool {
	t = strings.TrimPrefix(strings.ToLower(t), "application/")
	return t == "jwt" || t == "at+jwt"
}

func hs256(key []byte, signingInput string) []byte {
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, signingInput)
	return mac.Sum(nil)
}

// verifySignature checks sig over signingInput with the verifier's key, whose
// algorithm the header has matched.
func (v *Verifier) verifySignature(signingInput string, sig []byte) bool {
	if secret, ok := v.key.([]byte); ok {
		return hmac.Equal(hs256(secret, signingInput), sig)
	}
	digest := sha256.Sum256([]byte(signingInput))
	switch key := v.key.(type) {
	case *rsa.PublicKey:
		return rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) == nil
	case *ecdsa.PublicKey:
		return jwsVerifyECDSA(key, digest[:], sig)
	}
	return false
}

// jwsVerifyECDSA checks a JWS ECDSA signature over digest: R and S as fixed-size
// big-endian integers (RFC 7518 section 3.4); the ASN.1 form fails the length check.
func jwsVerifyECDSA(pub *ecdsa.PublicKey, digest, sig []byte) bool {
	size := (pub.Curve.Params().N.BitLen() + 7) / 8
	if len(sig) != 2*size {
		return false
	}
	r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
	return ecdsa.Verify(pub, digest, r, s)
}

// checkClaims parses the claims set and applies the time, issuer and audience rules.
func (v *Verifier) checkClaims(data []byte) (*Claims, error) {
	m, err := parseObject(data, "payload")
	if err != nil {
		return nil, err
	}
	var c Claims
	for _, f := range []struct {
		name string
		dst  *string
	}{{"sub", &c.Subject}, {"iss", &c.Issuer}, {"jti", &c.ID}} {
		if raw, ok := m[f.name]; ok {
			s, ok := jsonString(raw)
			if !ok {
				return nil, errorf(ErrClaims, "%s is not a string", f.name)
			}
			*f.dst = s
		}
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"exp", &c.Expiry}, {"nbf", &c.NotBefore}, {"iat", &c.IssuedAt}} {
		raw, ok := m[f.name]
		if !ok {
			if f.name == "exp" {
				return nil, errorf(ErrClaims, "exp missing")
			}
			continue
		}
		// A NumericDate (RFC 7519 section 2): seconds since the epoch, maybe fractional.
		if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
			return nil, errorf(ErrClaims, "%s is not a NumericDate", f.name)
		}
		sec, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || sec < 0 || sec > maxNumericDate {
			return nil, errorf(ErrClaims, "%s is not a NumericDate", f.name)
		}
		whole, frac := math.Modf(sec)
		*f.dst = time.Unix(int64(whole), int64(frac*1e9)).UTC()
	}
	if raw, ok := m["aud"]; ok {
		if c.Audience, ok = stringOrList(raw); !ok {
			return nil, errorf(ErrClaims, "aud is not a string or an array of strings")
		}
	}
	if raw, ok := m["scope"]; ok {
		s, ok := jsonString(raw)
		if !ok {
			return nil, errorf(ErrClaims, "scope is not a string")
		}
		for _, f := range strings.Split(s, " ") {
			if f != "" {
				c.Scopes = append(c.Scopes, f)
			}
		}
	}

	now := v.cfg.Now()
	switch {
	case !now.Before(c.Expiry.Add(leeway)):
		return nil, &Error{Kind: ErrExpired}
	case !c.NotBefore.IsZero() && c.NotBefore.After(now.Add(leeway)):
		return nil, &Error{Kind: ErrNotYetValid}
	case !c.IssuedAt.IsZero() && c.IssuedAt.After(now.Add(leeway)):
		return nil, &Error{Kind: ErrIssuedFuture}
	case v.cfg.Issuer != "" && c.Issuer != v.cfg.Issuer:
		return nil, &Error{Kind: ErrIssuer}
	case v.cfg.Audience != "" && !slices.Contains(c.Audience, v.cfg.Audience):
		return nil, &Error{Kind: ErrAudience}
	}
	if _, ok := m["sub"]; !ok {
		return nil, errorf(ErrClaims, "sub missing")
	}
	if c.Subject == "" {
		return nil, errorf(ErrClaims, "sub is empty")
	}
	return &c, nil
}

// parseObject parses data as one JSON object and returns its members by exact
// name, each checked for syntax only. Invalid UTF-8, what package jsonkeys refuses
// (a repeated name above all: two parsers may read it differently) and trailing
// data are errors; what ("header" or "payload") prefixes their details.
func parseObject(data []byte, what string) (map[string]json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, errorf(ErrMalformed, "%s: invalid UTF-8", what)
	}
	if err := jsonkeys.CheckExact(data); jsonkeys.Refused(err) {
		return nil, errorf(ErrMalformed, "%s: %s", what, refusal(err))
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if !bytes.HasPrefix(data, []byte("{")) || dec.Decode(&m) != nil {
		return nil, errorf(ErrMalformed, "%s: not a JSON object", what)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(ErrMalformed, "%s: data after the JSON object", what)
	}
	return m, nil
}

// refusal words a jsonkeys refusal without the key, which the client wrote: an
// error's text goes into a WWW-Authenticate header.
func refusal(err error) string {
	if dup, ok := errors.AsType[*jsonkeys.Error](err); ok {
		return fmt.Sprintf("duplicate member name at offset %d", dup.Offset)
	}
	if lone, ok := errors.AsType[*jsonkeys.SurrogateError](err); ok {
		return fmt.Sprintf("unpaired surrogate escape at offset %d", lone.Offset)
	}
	return err.Error()
}

// jsonString decodes raw if it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// stringOrList decodes an "aud" value: one string or an array of them.
func stringOrList(raw json.RawMessage) ([]string, bool) {
	if s, ok := jsonString(raw); ok {
		return []string{s}, true
	}
	var list []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	out := make([]string, len(list))
	for i, item := range list {
		var ok bool
		if out[i], ok = jsonString(item); !ok {
			return nil, false
		}
	}
	return out, true
}

// SignHS256 returns a compact HS256 JWT for development (quartet's "token"
// command) carrying "sub", "scope" (unless empty), "iat" = now, "exp" = now +
// ttl, and "iss" and "aud" when cfg sets them, so a verifier of cfg accepts it.
func SignHS256(cfg Config, subject, scope string, ttl time.Duration) (string, error) {
	if len(cfg.Secret) == 0 {
		return "", errors.New("jwt: signing a token needs the HS256 secret")
	}
	if err := checkSecret(cfg.Secret); err != nil {
		return "", err
	}
	if subject == "" {
		return "", errors.New("jwt: a token needs a subject")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("jwt: token lifetime %v must be positive", ttl)
	}
	t := time.Now()
	if cfg.Now != nil {
		t = cfg.Now()
	}
	exp := t.Add(ttl)
	if exp.Unix() > maxNumericDate {
		return "", fmt.Errorf("jwt: token lifetime %v is too long", ttl)
	}
	payload, err := json.Marshal(struct {
		Issuer   string `json:"iss,omitempty"`
		Subject  string `json:"sub,omitempty"`
		Audience string `json:"aud,omitempty"`
		Expiry   int64  `json:"exp"`
		IssuedAt int64  `json:"iat"`
		Scope    string `json:"scope,omitempty"`
	}{cfg.Issuer, subject, cfg.Audience, exp.Unix(), t.Unix(), scope})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(payload)
	return input + "." + enc.EncodeToString(hs256(cfg.Secret, input)), nil
}
