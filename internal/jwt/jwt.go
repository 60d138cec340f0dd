// Package jwt verifies bearer tokens: JSON Web Tokens (RFC 7519) in the JWS
// Compact Serialization (RFC 7515 section 7.1), signed with the one algorithm
// bound to the configured key: HS256 for a secret, RS256 for an RSA public
// key, ES256 for a P-256 public key. It knows nothing of HTTP or gRPC: it
// takes a token string and returns its claims or an *Error whose message is
// safe to show to the client; which request needed the token, and what a
// refusal becomes on the wire, is the caller's business.
//
// A token's key is never chosen by the token: "jku", "x5u", "jwk", "x5c" and
// "kid" may be present and are ignored (RFC 8725 sections 2.1 and 3.1).
// Unsecured tokens ("alg": "none") and any algorithm other than the key's are
// refused, as are HMAC secrets under 32 bytes and RSA keys under 2048 bits.
//
// Choices the RFCs leave to the recipient, and what this package does:
//
//   - Duplicate member names in the header or the claims set are rejected,
//     rather than resolved by "last one wins" (RFC 7515 section 5.2, RFC 7519
//     section 4): two parsers reading one token differently is how
//     verification gets bypassed. Member names are compared exactly; Go's
//     case-insensitive struct decoding is never applied to a token.
//   - "crit" is rejected whenever present: no extension is understood here,
//     and an empty list is forbidden anyway (RFC 7515 section 4.1.11).
//   - "typ", when present, must be "JWT", "application/jwt", "at+jwt" or
//     "application/at+jwt", compared case-insensitively (RFC 7515 section
//     4.1.9, RFC 7519 section 5.1, RFC 9068 section 2.1). Other types are
//     rejected so that a JWS minted for another purpose cannot be replayed as
//     an access token (RFC 8725 section 3.11).
//   - "cty": "JWT" (a nested token) and "b64": false (RFC 7797 unencoded
//     payload) are rejected: neither is supported.
//   - Claims: "exp" is required; "nbf" and "iat" are checked when present;
//     all three are NumericDates (integer or fractional JSON numbers from
//     1970 to year 9999). Times are compared with a leeway of 60 seconds.
//     "iss" and "aud" are checked only when an issuer or audience is
//     configured (as the contract says; RFC 7519 section 4.1.3 would refuse
//     any "aud" when none is configured), but their types are always checked.
//     "sub" is required and must be a non-empty string: it is the caller's
//     identity, which the logs and every permission rest on, so a token that
//     names nobody authenticates nobody.
//   - Scopes come from "scope", a space-separated string (RFC 8693 section
//     4.2, RFC 9068 section 2.2.3). A "scp" claim is ignored: one spelling
//     keeps the rule simple to state, and a non-string "scope" is rejected
//     rather than guessed at.
//   - The whole token is capped at 8 KiB before anything is decoded.
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
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// leeway is the clock skew tolerated on exp, nbf and iat.
	leeway = 60 * time.Second

	// maxTokenSize bounds the work done on an unauthenticated input.
	maxTokenSize = 8 << 10

	// minHMACKeySize is the HS256 key size floor of RFC 7518 section 3.2.
	minHMACKeySize = 32

	// minRSABits is the RS256 key size floor of RFC 7518 section 3.3.
	minRSABits = 2048

	// maxNumericDate is 9999-12-31T23:59:59Z; later values cannot be
	// represented as a time and are certainly not meant.
	maxNumericDate = 253402300799
)

// Algorithms a verifier can be bound to.
const (
	algHS256 = "HS256"
	algRS256 = "RS256"
	algES256 = "ES256"
)

// Kinds of token failure. An *Error wraps exactly one of them, so callers
// can test the kind with errors.Is. The texts are safe to show to clients.
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

// An Error reports why a token was refused. Its message is the kind's text,
// optionally followed by a detail naming the part of the token at fault.
// The detail is always text written by this package or its caller, never
// text copied from the token, so the whole message is safe to return to the client (it contains
// no '"' or '\', so it also fits an RFC 6750 error_description).
type Error struct {
	Kind   error  // one of the Err* values
	Detail string // e.g. "payload: exp missing"; may be empty
}

// Error returns the client-safe message.
func (e *Error) Error() string {
	if e.Detail == "" {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Detail
}

// Unwrap returns the kind, for errors.Is.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Config configures a Verifier. Exactly one of Secret and PublicKeyPEM
// must be non-empty. Authentication being off (neither
// configured) is the caller's decision: it builds no verifier then.
type Config struct {
	// Secret is the HS256 key: at least 32 bytes.
	Secret []byte

	// PublicKeyPEM holds one PEM block: "PUBLIC KEY" (PKIX, RSA or EC P-256)
	// or "RSA PUBLIC KEY" (PKCS #1). An RSA key binds the verifier to RS256
	// and must have at least 2048 bits; a P-256 key binds it to ES256.
	PublicKeyPEM []byte

	// Issuer, if set, must equal the token's "iss".
	Issuer string

	// Audience, if set, must be one of the token's "aud" values.
	Audience string

	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// A Verifier checks bearer tokens against one key and one algorithm.
// It is safe for concurrent use.
type Verifier struct {
	alg      string
	secret   []byte
	rsaKey   *rsa.PublicKey
	ecKey    *ecdsa.PublicKey
	issuer   string
	audience string
	now      func() time.Time
}

// New returns a verifier for cfg, or an error describing what is wrong
// with the configured key.
func New(cfg Config) (*Verifier, error) {
	v := &Verifier{issuer: cfg.Issuer, audience: cfg.Audience, now: cfg.Now}
	if v.now == nil {
		v.now = time.Now
	}
	switch {
	case len(cfg.Secret) > 0 && len(cfg.PublicKeyPEM) > 0:
		return nil, errors.New("jwt: configure either a secret or a public key, not both")
	case len(cfg.Secret) > 0:
		if err := checkSecret(cfg.Secret); err != nil {
			return nil, err
		}
		v.alg = algHS256
		v.secret = bytes.Clone(cfg.Secret)
	case len(cfg.PublicKeyPEM) > 0:
		key, err := parsePublicKey(cfg.PublicKeyPEM)
		if err != nil {
			return nil, err
		}
		switch key := key.(type) {
		case *rsa.PublicKey:
			v.alg, v.rsaKey = algRS256, key
		case *ecdsa.PublicKey:
			v.alg, v.ecKey = algES256, key
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

// parsePublicKey returns the *rsa.PublicKey or *ecdsa.PublicKey held in
// data, which must be exactly one PEM block.
func parsePublicKey(data []byte) (any, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("jwt: public key: no PEM block found")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("jwt: public key: unexpected data after the first PEM block")
	}
	if len(block.Headers) != 0 {
		return nil, fmt.Errorf("jwt: public key: PEM block %q has headers (encrypted keys are not supported)", block.Type)
	}
	var key any
	switch block.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("jwt: public key: %v", err)
		}
		key = k
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("jwt: public key: %v", err)
		}
		key = k
	case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
		return nil, fmt.Errorf("jwt: public key: PEM block is a %s; configure the public key instead", block.Type)
	default:
		return nil, fmt.Errorf("jwt: public key: PEM block type %q; want \"PUBLIC KEY\" or \"RSA PUBLIC KEY\"", block.Type)
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < minRSABits {
			return nil, fmt.Errorf("jwt: public key: RSA modulus is %d bits; at least %d are required (RFC 7518 section 3.3)",
				n, minRSABits)
		}
		return k, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("jwt: public key: EC curve %s; only P-256 (ES256) is supported", k.Curve.Params().Name)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("jwt: public key: %T keys are not supported; use RSA (RS256) or EC P-256 (ES256)", key)
	}
}

// ValidUntil is the instant from which Verify refuses the token c came from
// as expired: its exp plus the leeway, on the verifier's clock (Now).
func (v *Verifier) ValidUntil(c *Claims) time.Time { return c.Expiry.Add(leeway) }

// Now is the verifier's clock.
func (v *Verifier) Now() time.Time { return v.now() }

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
	seg, err := splitJWS(token)
	if err != nil {
		return nil, err
	}
	if err := v.checkHeader(seg.header); err != nil {
		return nil, err
	}
	if !v.verifySignature(seg.signingInput, seg.signature) {
		return nil, &Error{Kind: ErrSignature}
	}
	// Only now, with the signature good, is the payload read (RFC 8725
	// section 3.1: no claim is looked at before the token is authenticated).
	return v.checkClaims(seg.payload)
}

// jwsParts is a compact JWS split into its decoded segments.
type jwsParts struct {
	header, payload, signature []byte
	signingInput               string
}

// splitJWS splits a compact JWS into three base64url segments and decodes
// them. It accepts only the unpadded base64url alphabet (RFC 7515 section 2):
// no '=', no whitespace (which Go's decoder would otherwise skip), and no
// non-zero trailing bits. An empty signature (an unsecured JWS) gets past
// here so that its "alg" is reported; it can never verify.
func splitJWS(token string) (*jwsParts, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errorf(ErrMalformed, "want 3 dot-separated segments, found %d", len(parts))
	}
	names := [3]string{"header", "payload", "signature"}
	var dec [3][]byte
	for i, p := range parts {
		for j := 0; j < len(p); j++ {
			if !jwsBase64Char(p[j]) {
				return nil, errorf(ErrMalformed, "%s: invalid base64url character at offset %d", names[i], j)
			}
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(p)
		if err != nil {
			return nil, errorf(ErrMalformed, "%s: invalid base64url length or padding bits", names[i])
		}
		dec[i] = b
	}
	return &jwsParts{
		header:       dec[0],
		payload:      dec[1],
		signature:    dec[2],
		signingInput: token[:len(parts[0])+1+len(parts[1])],
	}, nil
}

func jwsBase64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// checkHeader validates the JOSE header: the algorithm must be the one the
// key is bound to, and no member may ask for something not supported.
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
		// Whatever it lists, it lists something not understood here; an
		// empty list or a non-list is invalid in itself.
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

// isJWTType reports whether a "typ" or "cty" value names a JWT or a JWT
// access token. Media types are case-insensitive and may omit "application/"
// (RFC 7515 section 4.1.9).
func isJWTType(t string) bool {
	t = strings.ToLower(t)
	t = strings.TrimPrefix(t, "application/")
	return t == "jwt" || t == "at+jwt"
}

// verifySignature checks sig over signingInput with the verifier's key and
// algorithm. The token's header has already been matched to that algorithm;
// nothing in the token selects the key.
func (v *Verifier) verifySignature(signingInput string, sig []byte) bool {
	switch v.alg {
	case algHS256:
		return jwsVerifyHS256(v.secret, signingInput, sig)
	case algRS256:
		return jwsVerifyRS256(v.rsaKey, signingInput, sig)
	case algES256:
		digest := sha256.Sum256([]byte(signingInput))
		return jwsVerifyECDSA(v.ecKey, digest[:], sig)
	}
	return false
}

// jwsVerifyHS256 checks an HMAC SHA-256 (RFC 7518 section 3.2) in constant
// time.
func jwsVerifyHS256(key []byte, signingInput string, sig []byte) bool {
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, signingInput)
	return hmac.Equal(mac.Sum(nil), sig)
}

// jwsVerifyRS256 checks an RSASSA-PKCS1-v1_5 SHA-256 signature (RFC 7518
// section 3.3).
func jwsVerifyRS256(pub *rsa.PublicKey, signingInput string, sig []byte) bool {
	digest := sha256.Sum256([]byte(signingInput))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) == nil
}

// jwsVerifyECDSA checks a JWS ECDSA signature over digest (RFC 7518 section
// 3.4). The signature is R and S as fixed-size big-endian integers, each the
// size of the curve's order; the ASN.1 DER form used elsewhere is not valid
// in a JWS and fails the length check.
func jwsVerifyECDSA(pub *ecdsa.PublicKey, digest, sig []byte) bool {
	size := (pub.Curve.Params().N.BitLen() + 7) / 8
	if len(sig) != 2*size {
		return false
	}
	r := new(big.Int).SetBytes(sig[:size])
	s := new(big.Int).SetBytes(sig[size:])
	return ecdsa.Verify(pub, digest, r, s)
}

// checkClaims parses the claims set and applies the time, issuer and
// audience rules.
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
	rawExp, ok := m["exp"]
	if !ok {
		return nil, errorf(ErrClaims, "exp missing")
	}
	if c.Expiry, err = numericDate("exp", rawExp); err != nil {
		return nil, err
	}
	if raw, ok := m["nbf"]; ok {
		if c.NotBefore, err = numericDate("nbf", raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := m["iat"]; ok {
		if c.IssuedAt, err = numericDate("iat", raw); err != nil {
			return nil, err
		}
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

	now := v.now()
	if !now.Before(c.Expiry.Add(leeway)) {
		return nil, &Error{Kind: ErrExpired}
	}
	if !c.NotBefore.IsZero() && c.NotBefore.After(now.Add(leeway)) {
		return nil, &Error{Kind: ErrNotYetValid}
	}
	if !c.IssuedAt.IsZero() && c.IssuedAt.After(now.Add(leeway)) {
		return nil, &Error{Kind: ErrIssuedFuture}
	}
	if v.issuer != "" && c.Issuer != v.issuer {
		return nil, &Error{Kind: ErrIssuer}
	}
	if v.audience != "" && !slices.Contains(c.Audience, v.audience) {
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

// parseObject parses data as one JSON object and returns its members by
// exact name. Invalid UTF-8, duplicate names and trailing data are errors.
// Member values are checked for syntax only; the caller decodes the ones it
// uses. what ("header" or "payload") prefixes error details.
func parseObject(data []byte, what string) (map[string]json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, errorf(ErrMalformed, "%s: invalid UTF-8", what)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	notObject := func() error { return errorf(ErrMalformed, "%s: not a JSON object", what) }
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject()
	}
	m := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject()
		}
		name, ok := tok.(string)
		if !ok {
			return nil, notObject()
		}
		if _, dup := m[name]; dup {
			return nil, errorf(ErrMalformed, "%s: duplicate member name at offset %d", what, dec.InputOffset())
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject()
		}
		m[name] = raw
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, notObject()
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(ErrMalformed, "%s: data after the JSON object", what)
	}
	return m, nil
}

// jsonString decodes raw if it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// stringOrList decodes an "aud" value: one string or an array of them.
func stringOrList(raw json.RawMessage) ([]string, bool) {
	if s, ok := jsonString(raw); ok {
		return []string{s}, true
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, ok := jsonString(item)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// numericDate decodes a NumericDate (RFC 7519 section 2): seconds since the
// epoch, possibly fractional.
func numericDate(name string, raw json.RawMessage) (time.Time, error) {
	bad := errorf(ErrClaims, "%s is not a NumericDate", name)
	if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return time.Time{}, bad
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > maxNumericDate {
		return time.Time{}, bad
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// SignHS256 returns a compact HS256 JWT for development use (quartet's
// "token" command). It carries "sub" (required), "scope" (omitted when
// empty), "iat" = now and "exp" = now + ttl, and "iss" and "aud" when cfg
// configures them, so that a verifier built from the same cfg accepts it.
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
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	t := now()
	exp := t.Add(ttl)
	if exp.Unix() > maxNumericDate {
		return "", fmt.Errorf("jwt: token lifetime %v is too long", ttl)
	}
	claims := struct {
		Issuer   string `json:"iss,omitempty"`
		Subject  string `json:"sub,omitempty"`
		Audience string `json:"aud,omitempty"`
		Expiry   int64  `json:"exp"`
		IssuedAt int64  `json:"iat"`
		Scope    string `json:"scope,omitempty"`
	}{cfg.Issuer, subject, cfg.Audience, exp.Unix(), t.Unix(), scope}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, cfg.Secret)
	io.WriteString(mac, input)
	return input + "." + enc.EncodeToString(mac.Sum(nil)), nil
}
