package graphql

import "sync"

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

type documentCache = lru[string, *preparedDocument]

func newDocumentCache(budget int64) *documentCache {
	return newLRU[string, *preparedDocument](budget)
}

type preparedDocument struct {
	query     string
	doc       *Document
	errs      []*Error                       // parse, limit or validation errors
	fragments map[string]*FragmentDefinition // by name, the first of each

	plansMu sync.RWMutex
	plans   map[planKey][]*execGroup // see executor.subfields

	costs sync.Map // *OperationDefinition to its cost, when it depends on no variable
}

type planKey struct {
	op *OperationDefinition
	subKey
}

// plan returns the fields collected for op and k, by collect the first time;
// they are never modified.
func (p *preparedDocument) plan(op *OperationDefinition, k subKey, collect func() []*execGroup) []*execGroup {
	pk := planKey{op, k}
	p.plansMu.RLock()
	gs, ok := p.plans[pk]
	p.plansMu.RUnlock()
	if ok {
		return gs
	}
	gs = collect()
	p.plansMu.Lock()
	defer p.plansMu.Unlock()
	if first, ok := p.plans[pk]; ok {
		return first // another execution collected it meanwhile: keep one
	}
	if p.plans == nil {
		p.plans = make(map[planKey][]*execGroup)
	}
	p.plans[pk] = gs
	return gs
}

// prepare parses, limits and validates a query, or finds it in the cache.
func (s *Schema) prepare(query string) *preparedDocument {
	if p, ok := s.cache.get(query); ok {
		return p
	}
	doc, tokens, err := parseLimited(query, s.Limits)
	if err != nil {
		se := err.(*SyntaxError)
		return &preparedDocument{query: query, errs: []*Error{newError(codeParseFailed, "Syntax Error: "+se.Msg, se.Pos)}}
	}
	p := &preparedDocument{query: query, doc: doc, fragments: fragmentsOf(doc)}
	if errs := checkLimits(doc, p.fragments, s.Limits); errs != nil {
		p.errs = errs
	} else if errs := s.validate(doc); len(errs) > 0 {
		p.errs = errs
	} else {
		s.cache.put(query, p, documentSize(query, tokens))
	}
	return p
}

// fragmentsOf returns the fragments of doc by name, the first of each; nil if none.
func fragmentsOf(doc *Document) map[string]*FragmentDefinition {
	var byName map[string]*FragmentDefinition
	for _, d := range doc.Definitions {
		if f, ok := d.(*FragmentDefinition); ok && byName[f.Name] == nil {
			if byName == nil {
				byName = make(map[string]*FragmentDefinition)
			}
			byName[f.Name] = f
		}
	}
	return byName
}
