package graphql

// The document cache keeps, by query text, the documents that parsed, stayed
// within the limits and validated, so that a repeated query skips that work.
// Documents with errors are not kept: their errors can be far larger than
// their text, and a client varying a comment would otherwise fill the cache
// with them; preparing them again costs no more than the limits allow.
//
// The cache is bounded in bytes, not entries, since one document can hold a
// thousand times the memory of another. A document's size is estimated when
// it is parsed, from its length and its number of tokens, and covers the
// syntax tree and what executing it adds (the collected fields of each
// selection set, see preparedDocument.plan).
const (
	// defaultCacheBytes is the estimated memory the cached documents of a
	// schema may hold together: some hundreds of documents of a usual size,
	// far more than an application sends. A document estimated larger than a
	// sixteenth of it (the introspection query of an editor is an eighth of
	// that) is not cached, so that one request cannot empty the cache. What
	// the cache holds stays after an attack: 4 MiB keeps it under a twentieth
	// of a 20,000-user store's resident size (bench/README.md, "Hostile
	// load").
	defaultCacheBytes = 4 << 20

	// bytesPerToken and bytesPerEntry estimate a document's memory beyond
	// its text: measured (TestDocumentSize), a token costs 90 to 160 bytes
	// of syntax tree and collected fields, and an entry up to a kilobyte of
	// fixed overhead; the estimate leaves a margin above that.
	bytesPerToken = 192
	bytesPerEntry = 1 << 10
)

// documentSize estimates the memory a prepared document of query, tokens
// tokens long, holds: its text, the strings decoded from it (shorter than
// the text, but a decoded string may keep twice its length of capacity),
// and the rest in proportion to its tokens.
func documentSize(query string, tokens int) int64 {
	return 3*int64(len(query)) + int64(tokens)*bytesPerToken + bytesPerEntry
}

// documentCache keeps prepared documents by query text, least recently used
// out first, within a budget of estimated bytes (see documentSize).
type documentCache = lru[string, *preparedDocument]

func newDocumentCache(budget int64) *documentCache {
	return newLRU[string, *preparedDocument](budget)
}
