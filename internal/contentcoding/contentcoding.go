// Package contentcoding handles HTTP content codings (RFC 9110 section 8.4) both
// ways. Answers: Gzip negotiates from Accept-Encoding and encodes; an answer whose
// coding depends on Accept-Encoding says so in Vary; it is gzip-encoded only when
// the client accepts it and it is of a type gzip shrinks, not encoded already, and
// at least GzipMinBytes long (or so declared) before its first flush; and it
// decodes to exactly what the handler wrote, flushed parts as flushed. Requests:
// Encoded tells whether a body has a coding, which the service decodes none of
// (each surface answers 415 with an Accept-Encoding of identity, RFC 9110 15.5.16).
package contentcoding

import (
	"net/http"
	"strings"
)

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
