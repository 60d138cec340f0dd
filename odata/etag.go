package odata

import (
	"crypto/sha256"
	"encoding/hex"
)

// entityTag is x's strong ETag, quoted: 128 bits of the SHA-256 of its
// properties written as JSON (as the REST surface tags its records), so any
// change to the record changes it and nothing else does.
func (t *EntityType) entityTag(x any) string {
	plain := Query{Type: t} // every property, in the default format
	sum := sha256.Sum256(plain.appendFields([]byte{'{'}, x, false))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
