// Package contentcoding handles HTTP content codings (RFC 9110 section 8.4) both
// ways. Answers: Gzip negotiates from Accept-Encoding and encodes; an answer whose
// coding depends on Accept-Encoding says so in Vary; it is gzip-encoded only when
// the client accepts it and it is of a type gzip shrinks, not encoded already, and
// at least GzipMinBytes long (or so declared) before its first flush; and it
// decodes to exactly what the handler wrote, flushed parts as flushed. Requests:
// Encoded tells whether a body has a coding, which the service decodes none of
// (each surface answers 415 with an Accept-Encoding of identity, RFC 9110 15.5.16);
// CheckJSON is the one rule for a JSON request body's headers, each surface words
// its refusal in its own format.
package contentcoding

import (
	"errors"
	"mime"
	"net/http"
	"strings"
)

// Why CheckJSON refuses a request body.
var (
	ErrEncoded   = errors.New("the request body is content-encoded")
	ErrMediaType = errors.New("the request body is not of the media type wanted")
	ErrCharset   = errors.New("the request body is not encoded in UTF-8")
)

// CheckJSON reports why a request body with headers h cannot be read as JSON of
// media type want (application/json, or a JSON type such as merge-patch+json):
// it has a content coding (ErrEncoded), another media type (ErrMediaType, "+json"
// types included: application/evil+json is not the JSON an API defines), or a
// charset other than UTF-8 (ErrCharset, RFC 8259 section 11); nil when none.
func CheckJSON(h http.Header, want string) error {
	if Encoded(h) {
		return ErrEncoded
	}
	ct := h.Get("Content-Type")
	if ct == want { // the usual header needs no parsing
		return nil
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil || mediaType != want {
		return ErrMediaType
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return ErrCharset
	}
	return nil
}

// Encoded reports whether h names a content coding other than identity.
func Encoded(h http.Header) bool {
	for _, v := range h["Content-Encoding"] {
		for coding := range strings.SplitSeq(v, ",") {
			if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}
