package odata

import (
	"crypto/sha256"
	"encoding/hex"
)

// Conditional requests on single entities (OData 4.01 Protocol, section 11.4.1.1;
// RFC 9110 section 13): the strong ETag of an entity is a hash of every one of its
// structural property values, so any change to the record changes it and nothing
// else does. It is sent as the ETag header and, as OData's JSON format asks, as the
// entity's @odata.etag; If-None-Match naming it answers 304.

// entityTag is x's strong ETag, quoted: 128 bits of the SHA-256 of its
// properties written as JSON, as the REST surface tags its records.
func (t *EntityType) entityTag(x any) string {
	b := []byte{'{'}
	for i, p := range t.Properties {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, p.Name)
		b = append(b, ':')
		b = appendValue(b, p, x)
	}
	sum := sha256.Sum256(append(b, '}'))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
