package graphql

import (
	"container/list"
	"sync"
)

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
	// sixteenth of it is not cached, so that one request cannot empty the
	// cache. (What the cache holds stays after an attack; 8 MiB keeps that
	// within a tenth of a 20,000-user store's resident size.)
	defaultCacheBytes = 8 << 20

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

// documentCache keeps prepared documents, least recently used first out,
// within a budget of estimated bytes.
type documentCache struct {
	mu     sync.Mutex
	budget int64
	size   int64      // the sum of the sizes of the entries
	order  *list.List // of *cacheEntry, most recent at the front
	byKey  map[string]*list.Element
}

type cacheEntry struct {
	p    *preparedDocument
	size int64
}

func newDocumentCache(budget int64) *documentCache {
	return &documentCache{budget: budget, order: list.New(), byKey: make(map[string]*list.Element)}
}

func (c *documentCache) get(q string) *preparedDocument {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[q]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cacheEntry).p
	}
	return nil
}

// put keeps p, of estimated size bytes, evicting the least recently used
// documents as needed to stay within the budget.
func (c *documentCache) put(p *preparedDocument, size int64) {
	if size > c.budget/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[p.query]; ok {
		return // another request prepared it meanwhile: keep one
	}
	c.byKey[p.query] = c.order.PushFront(&cacheEntry{p: p, size: size})
	c.size += size
	for c.size > c.budget {
		last := c.order.Back()
		e := c.order.Remove(last).(*cacheEntry)
		delete(c.byKey, e.p.query)
		c.size -= e.size
	}
}

// bytes returns the estimated size of the cached documents.
func (c *documentCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// prepare parses, limits and validates a query, or finds it in the cache.
func (s *Schema) prepare(query string) *preparedDocument {
	if p := s.cache.get(query); p != nil {
		return p
	}
	p := &preparedDocument{query: query}
	doc, tokens, err := parseLimited(query, s.Limits)
	if err != nil {
		se := err.(*SyntaxError)
		p.errs = []*Error{newError(CodeParseFailed, "Syntax Error: "+se.Msg, se.Pos)}
		return p
	}
	p.doc = doc
	if errs := checkLimits(doc, s.Limits); errs != nil {
		p.errs = errs
		return p
	}
	if errs := s.Validate(doc); len(errs) > 0 {
		p.errs = errs
		return p
	}
	for _, d := range doc.Definitions {
		if f, ok := d.(*FragmentDefinition); ok && p.fragments[f.Name] == nil {
			if p.fragments == nil {
				p.fragments = make(map[string]*FragmentDefinition)
			}
			p.fragments[f.Name] = f
		}
	}
	s.cache.put(p, documentSize(query, tokens))
	return p
}
