package odata

import (
	"crypto/sha256"
	"encoding/hex"
)

// entityTag is x's strong ETag, quoted: 128 bits of the SHA-256 of its
// properties written as JSON (as the REST surface tags its records), so any
// change to the record changes it and nothing else does.
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
