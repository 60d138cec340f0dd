package graphql

import "sync"

// preparedDocument is a query prepared: its document, or the errors refusing
// it, and what its executions share.
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
	p := &preparedDocument{query: query, doc: doc, fragments: fragmentsOf(doc), plans: map[planKey][]*execGroup{}}
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
