package graphql

// A query is prepared once (parsed, limited, validated) and kept by its text in
// a cache bounded in estimated bytes; its executions share the syntax tree, the
// fields each selection set collects (plan) and the cost. Documents with errors
// are not kept: a client varying a comment would fill the cache with them.
const (
	// defaultCacheBytes holds hundreds of usual documents, and what it holds
	// after an attack stays under a twentieth of a 20,000-user store's memory.
	defaultCacheBytes = 4 << 20

	// A token costs 90 to 160 bytes of tree and collected fields, an entry up
	// to a kilobyte (TestDocumentSize); these leave a margin.
	bytesPerToken = 192
	bytesPerEntry = 1 << 10
)

// documentSize estimates a prepared document's memory: its text, the strings
// decoded from it (with up to twice their length of capacity), and its tokens.
func documentSize(query string, tokens int) int64 {
	return 3*int64(len(query)) + int64(tokens)*bytesPerToken + bytesPerEntry
}
