// Package contentcoding is the service's handling of HTTP content codings (RFC 9110
// section 8.4), both ways.
//
// Answers: Gzip negotiates an answer's coding from the request's Accept-Encoding
// and, when the client accepts gzip, returns a writer that encodes it. It
// guarantees that an answer whose coding depends on Accept-Encoding says so in Vary;
// that an answer is gzip-encoded only when the client accepts it and the answer is
// of a type gzip shrinks, not encoded already, and at least GzipMinBytes long (or
// said to be by its Content-Length) before its first flush; and that what is
// encoded decodes to exactly what the handler wrote, flushed parts as they were
// flushed.
//
// Requests: Encoded tells whether a request body has a content coding. The service
// decodes none: read as it is, a gzip body would be refused as malformed, and a
// header sent with a plain body would be ignored. Each surface answers such a
// request with 415 and an Accept-Encoding of identity, as RFC 9110 section
// 15.5.16 asks.
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
