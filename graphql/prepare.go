package graphql

import "sync"

// A query is prepared once (parsed, checked against the Limits, validated)
// and the prepared document is kept in the document cache (cache.go). Its
// executions then share, besides the syntax tree, the plans of its selection
// sets: the fields each one collects for a given object type, worked out by
// the first execution that needs them.

// preparedDocument is a query text prepared: its document, or the errors
// that refuse it, with what its executions share.
type preparedDocument struct {
	query     string
	doc       *Document
	errs      []*Error                       // parse, limit or validation errors
	fragments map[string]*FragmentDefinition // by name, the first of each

	plansMu sync.RWMutex
	plans   map[planKey][]*execGroup // see executor.subfields

	costs operationCosts // see Schema.operationCost
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
	p := &preparedDocument{query: query}
	doc, tokens, err := parseLimited(query, s.Limits)
	if err != nil {
		se := err.(*SyntaxError)
		p.errs = []*Error{newError(codeParseFailed, "Syntax Error: "+se.Msg, se.Pos)}
		return p
	}
	p.doc = doc
	if errs := checkLimits(doc, s.Limits); errs != nil {
		p.errs = errs
		return p
	}
	if errs := s.validate(doc); len(errs) > 0 {
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
	s.cache.put(query, p, documentSize(query, tokens))
	return p
}
