// Package contentcoding tells whether a request body has a content coding (RFC 9110
// section 8.4). No surface of the service decodes one: read as it is, a gzip body
// would be refused as malformed, and a header sent with a plain body would be
// ignored. Each surface answers such a request with 415 and an Accept-Encoding of
// identity, as RFC 9110 section 15.5.16 asks.
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
