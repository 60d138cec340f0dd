package odata

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// QueryOption is a set of system query options, those a route allows.
type QueryOption uint

// The supported system query options.
const (
	OptFilter QueryOption = 1 << iota
	OptOrderBy
	OptSelect
	OptExpand
	OptTop
	OptSkip
	OptCount
	OptApply   // $apply: filter, groupby, aggregate
	OptSearch  // $search over the entity type's string properties
	OptCompute // $compute: arithmetic aliases for $select, $filter and $orderby

	// optAll is every option of OData's core.
	optAll = OptFilter | OptOrderBy | OptSelect | OptExpand | OptTop | OptSkip | OptCount
)

var optionBits = map[string]QueryOption{
	"$filter": OptFilter, "$orderby": OptOrderBy, "$select": OptSelect, "$expand": OptExpand,
	"$top": OptTop, "$skip": OptSkip, "$count": OptCount, "$apply": OptApply, "$search": OptSearch,
	"$compute": OptCompute,
}

// Options OData defines and this package does not implement: unsupported, not unknown.
var unsupportedOptions = map[string]bool{
	"$levels":    true,
	"$skiptoken": true, "$deltatoken": true, "$index": true, "$schemaversion": true, "$id": true,
}

// Settings are a route's query settings, as ASP.NET's [EnableQuery] has them: the
// options allowed and the limits. A zero MaxTop, MaxSkip or MaxExpansionDepth
// means no limit.
type Settings struct {
	Allowed           QueryOption
	MaxTop            int64
	MaxSkip           int64
	MaxExpansionDepth int
	Limits            Limits
	Now               func() time.Time // the value of now(); nil means time.Now
}

// Query is a parsed, checked and compiled set of query options for one entity
// type, for one request: its evaluations, which may run at once, share one count
// against Limits.MaxVisits and Limits.MaxStringBytes.
type Query struct {
	Type *EntityType

	filter   *Filter
	order    []orderKey
	selected []*Property // in model order; nil means all
	explicit bool        // $select was given
	expand   []expansion
	top      int64
	skip     int64
	hasTop   bool
	count    bool

	applied []*Filter    // $apply's filter() transformations, before $filter
	agg     *aggregation // $apply's groupby or aggregate: the answer is rows, not entities
	search  searchExpr   // $search; nil when absent

	computed    []*computed // $compute's aliases
	computedSel []*computed // those $select names, written after the properties

	out  format // the answer's: $format's, then negotiate's
	etag string // the entity's ETag, written as @odata.etag; "" for none
}

type expansion struct {
	nav   *NavProperty
	q     *Query
	count bool // nav/$count: the number of related entities, not them
}

type orderKey struct {
	desc bool
	f    any // the compiled key
}

// parseQuery parses the raw (percent-encoded) query string of a request for
// entity type t and route settings s; once the query string is well-formed as
// splitQuery requires, parameters not starting with $ are ignored. The error is
// an *Error.
func parseQuery(raw string, t *EntityType, s Settings) (*Query, error) {
	b := newBudget(s.Limits)
	params, err := splitQuery(raw, b.Limits)
	if err != nil {
		return nil, err
	}
	o := &options{present: map[string]int{}}
	labels := map[string]string{}
	var out format
	for _, prm := range params {
		name := prm.name
		if !strings.HasPrefix(name, "$") {
			continue
		}
		lname := strings.ToLower(name)
		if lname == "$format" { // every resource takes it: it chooses the answer's format, not its data
			f, err := parseFormat(prm.value)
			if err != nil {
				err.Option = name
				return nil, err
			}
			out = f
			continue
		}
		bit, known := optionBits[lname]
		switch {
		case !known && unsupportedOptions[lname]:
			return nil, &Error{Option: name, Msg: "query option " + name + " is not supported"}
		case !known:
			return nil, &Error{Option: name, Msg: "unknown query option " + name}
		case s.Allowed&bit == 0:
			return nil, &Error{Option: name, Msg: "query option " + name + " is not allowed on this resource"}
		}
		o.present[lname] = 0
		labels[lname] = name
		if err := parseOption(o, lname, prm.value, b, t); err != nil {
			e := err.(*Error)
			e.Option = name
			return nil, e
		}
	}
	eval := &evaluation{maxVisits: int64(b.MaxVisits), maxBytes: int64(b.MaxStringBytes)}
	r := &resolver{settings: s, limits: b.Limits, now: time.Now, eval: eval}
	if s.Now != nil {
		r.now = s.Now
	}
	var q *Query
	err = run(func() { q = r.query(o, t, 0, func(opt string) string { return labels[opt] }) })
	if err != nil {
		return nil, err
	}
	q.setFormat(out)
	return q, nil
}

// parseOption parses the value of one top-level system query option.
func parseOption(o *options, name, value string, b *budget, t *EntityType) error {
	return run(func() {
		if name == "$search" { // its own grammar: words, not expressions
			o.search = parseSearch(value, b, t)
			return
		}
		p := newParser(value, b)
		switch name { // $apply and $compute are top level only: not options $expand takes
		case "$apply":
			o.apply = p.applyList()
		case "$compute":
			o.compute = p.computeList()
		default:
			p.option(o, name)
		}
		p.end()
	})
}

// resolver binds parsed options to the model, raising its errors as panics.
type resolver struct {
	settings Settings
	limits   Limits // with the defaults filled in
	now      func() time.Time
	eval     *evaluation // shared by the whole query, $expand's options included
}

// guard runs f, naming option in an error it raises without one.
func (r *resolver) guard(option string, f func()) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(*Error); ok && e.Option == "" {
				e.Option = option
			}
			panic(x)
		}
	}()
	f()
}

func fail(option string, pos int, format string, args ...any) {
	panic(&Error{Option: option, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// query resolves o for t at $expand depth depth; label names an option as the
// query string spells it.
func (r *resolver) query(o *options, t *EntityType, depth int, label func(string) string) *Query {
	q := &Query{Type: t, top: o.top, skip: o.skip, hasTop: o.has("$top"), count: o.count}
	c := &compiler{now: r.now(), eval: r.eval}
	if o.apply != nil {
		r.guard(label("$apply"), func() { q.applied, q.agg = resolveApply(o.apply, t, c, r.limits) })
	}
	if q.agg != nil {
		for _, opt := range []string{"$filter", "$select", "$expand", "$search"} {
			if pos, ok := o.present[opt]; ok {
				fail(label(opt), pos, "cannot be combined with groupby or aggregate in $apply; put the condition in filter() before them")
			}
		}
	}
	q.search = o.search
	if o.compute != nil {
		if q.agg != nil {
			fail(label("$compute"), o.present["$compute"], "cannot be combined with groupby or aggregate in $apply")
		}
		r.guard(label("$compute"), func() { q.computed = resolveCompute(o.compute, t, c) })
	}
	if o.filter != nil {
		r.guard(label("$filter"), func() { q.filter = compileFilter(o.filter, t, c, q.computed) })
	}
	switch {
	case len(o.orderBy) > 0 && q.agg != nil:
		r.guard(label("$orderby"), func() { q.agg.orderRows(o.orderBy) })
	case len(o.orderBy) > 0:
		r.guard(label("$orderby"), func() { q.order = compileOrder(o.orderBy, t, c, q.computed) })
	}
	if o.has("$select") {
		q.explicit = true
		if o.selectStar {
			q.computedSel = q.computed
		} else {
			set := map[*Property]bool{}
			for _, s := range o.selects {
				if c := aliasNamed(q.computed, s.Name); c != nil {
					if aliasNamed(q.computedSel, s.Name) == nil {
						q.computedSel = append(q.computedSel, c)
					}
					continue
				}
				p := t.Property(s.Name)
				if p == nil {
					msg := "unknown property %s on %s"
					if t.nav(s.Name) != nil {
						msg = "navigation property %s on %s cannot be selected; use $expand"
					}
					fail(label("$select"), s.Pos, msg, s.Name, t.Name)
				}
				set[p] = true
			}
			// In model order; empty, not nil, when only aliases are selected.
			q.selected = slices.DeleteFunc(slices.Clone(t.Properties), func(p *Property) bool { return !set[p] })
		}
	}
	s := r.settings
	if s.MaxTop > 0 && q.top > s.MaxTop {
		fail(label("$top"), o.present["$top"], "$top %d exceeds the maximum of %d", q.top, s.MaxTop)
	}
	if s.MaxSkip > 0 && q.skip > s.MaxSkip {
		fail(label("$skip"), o.present["$skip"], "$skip %d exceeds the maximum of %d", q.skip, s.MaxSkip)
	}
	seen := map[*NavProperty]bool{}
	for _, it := range o.expand {
		nav := t.nav(it.nav.Name)
		switch {
		case nav == nil && t.Property(it.nav.Name) != nil:
			fail(label("$expand"), it.nav.Pos, "%s is not a navigation property of %s", it.nav.Name, t.Name)
		case nav == nil:
			fail(label("$expand"), it.nav.Pos, "unknown navigation property %s on %s", it.nav.Name, t.Name)
		case seen[nav]:
			fail(label("$expand"), it.nav.Pos, "%s is expanded twice", nav.Name)
		case s.MaxExpansionDepth > 0 && depth+1 > s.MaxExpansionDepth:
			fail(label("$expand"), it.nav.Pos, "$expand depth exceeds the maximum of %d", s.MaxExpansionDepth)
		}
		seen[nav] = true
		if !nav.Collection {
			if it.count {
				fail(label("$expand"), it.nav.Pos, "/$count follows only a collection; %s is one entity", nav.Name)
			}
			for _, opt := range []string{"$orderby", "$top", "$skip", "$count"} {
				if pos, ok := it.opts.present[opt]; ok {
					fail(label("$expand"), pos, "%s cannot be applied to single-valued %s", opt, nav.Name)
				}
			}
		}
		if it.count { // a number: only what changes which entities are counted applies
			for _, opt := range []string{"$orderby", "$top", "$skip", "$count", "$select", "$expand"} {
				if pos, ok := it.opts.present[opt]; ok {
					fail(label("$expand"), pos, "%s cannot be applied to %s/$count; only $filter", opt, nav.Name)
				}
			}
		}
		sub := r.query(it.opts, nav.Target, depth+1, func(string) string { return label("$expand") })
		q.expand = append(q.expand, expansion{nav: nav, q: sub, count: it.count})
	}
	return q
}

// Filter is a compiled Boolean expression over one entity type.
type Filter struct {
	f     fn[bool]
	nvars int // lambda variables the expression uses: the size of its vars
}

// compileFilter checks and compiles e for t; a one-segment path may name an alias.
func compileFilter(e Expr, t *EntityType, c *compiler, aliases []*computed) *Filter {
	ck := &checker{root: t, aliases: aliases}
	ck.checkBool(e)
	return &Filter{f: c.compile(e).(fn[bool]), nvars: ck.maxv}
}

// Match reports whether the filter is true for entity x (null counts as false).
func (f *Filter) Match(x any) bool {
	var vars []any
	if f.nvars > 0 {
		vars = make([]any, f.nvars)
	}
	b, ok := f.f(x, vars)
	return b && ok
}

func compileOrder(items []OrderItem, t *EntityType, c *compiler, aliases []*computed) []orderKey {
	keys := make([]orderKey, len(items))
	for i, it := range items {
		ck := &checker{root: t, aliases: aliases}
		switch typ := ck.check(it.Expr); typ {
		case TypeNull, TypeEntity, TypeCollection:
			failf(it.Expr.Pos(), "cannot order by a value of type %v", typ)
		}
		if ck.maxv > 0 {
			failf(it.Expr.Pos(), "lambda expressions cannot be used in $orderby")
		}
		keys[i] = orderKey{desc: it.Desc, f: c.compile(it.Expr)}
	}
	return keys
}
