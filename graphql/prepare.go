package graphql

import "sync"

// A query is prepared once (parsed, checked against the Limits, validated) and
// kept in the document cache, by its text. Its executions then share, besides
// the syntax tree, the fields each selection set collects for a given object
// type (plan) and the operation's cost (operationCost).
//
// Only documents without errors are kept: errors can be far larger than their
// text, and a client varying a comment would fill the cache with them. The
// cache is bounded in estimated bytes, not entries (documentSize).
const (
	// defaultCacheBytes holds some hundreds of usual documents; an editor's
	// introspection query is an eighth of the sixteenth one entry may take.
	// It stays after an attack: 4 MiB keeps it under a twentieth of a
	// 20,000-user store's resident size (bench/README.md, "Hostile load").
	defaultCacheBytes = 4 << 20

	// A token costs 90 to 160 bytes of syntax tree and collected fields, an
	// entry up to a kilobyte (TestDocumentSize); these leave a margin.
	bytesPerToken = 192
	bytesPerEntry = 1 << 10
)

// documentSize estimates the memory of a prepared document of query, tokens
// long: its text, the strings decoded from it (which may keep twice their
// length of capacity), and the rest in proportion to its tokens.
func documentSize(query string, tokens int) int64 {
	return 3*int64(len(query)) + int64(tokens)*bytesPerToken + bytesPerEntry
}

type documentCache = lru[string, *preparedDocument]

func newDocumentCache(budget int64) *documentCache {
	return newLRU[string, *preparedDocument](budget)
}

// preparedDocument is a query text prepared: its document, or the errors
// that refuse it, with what its executions share.
type preparedDocument struct {
	query     string
	doc       *Document
	errs      []*Error                       // parse, limit or validation errors
	fragments map[string]*FragmentDefinition // by name, the first of each

	plansMu sync.RWMutex
	plans   map[planKey][]*execGroup // see executor.subfields

	costs sync.Map // *OperationDefinition to its cost, when it depends on no variable
}

// planKey names a selection set collected for all executions of an operation.
type planKey struct {
	op *OperationDefinition
	subKey
}

// plan returns the collected fields k names for op, made by collect the first time.
// The groups it returns are never modified.
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
