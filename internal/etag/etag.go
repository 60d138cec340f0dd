// Package etag compares entity tags as conditional requests do (RFC 9110 section
// 13.1): the one comparison the REST and OData surfaces share.
package etag

import "strings"

// ListMatches reports whether the header values (entity tags, or "*") name tag;
// strong is If-Match's comparison, where weak tags never match.
func ListMatches(values []string, tag string, strong bool) bool {
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			elem = strings.TrimSpace(elem)
			if elem == "*" {
				return true
			}
			if weak, ok := strings.CutPrefix(elem, "W/"); ok {
				if strong {
					continue
				}
				elem = weak
			}
			if elem == tag {
				return true
			}
		}
	}
	return false
}
