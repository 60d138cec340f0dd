package odata

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// $apply (OData Data Aggregation Extension 4.0), the subset a dashboard asks
// for: any number of filter(expr), then at most one groupby((p,...)[,aggregate(...)])
// or aggregate(...), separated by '/'. An aggregate item is "prop with
// sum|min|max|average|countdistinct as alias" or "$count as alias". groupby and
// aggregate turn the entities into rows, to which $orderby (by the rows' names),
// $top, $skip and $count apply; $filter, $select, $expand and $search are
// refused with them (put the condition in filter()).

// applySyntax is a parsed, unresolved $apply.
type applySyntax struct {
	filters []Expr
	group   []Segment // groupby's properties, never empty when groupby is given
	aggs    []aggSyntax
}

// aggSyntax is one item of aggregate(); prop is empty for $count.
type aggSyntax struct {
	prop   Segment
	method string // lower case; "$count" for $count
	alias  Segment
}

// aggregated reports whether the transformations end in rows, not entities.
func (a *applySyntax) aggregated() bool { return len(a.group) > 0 || len(a.aggs) > 0 }

func (p *parser) applyList() *applySyntax {
	a := &applySyntax{}
	p.list(tokSlash, func() {
		if a.aggregated() {
			failf(p.tok.pos, "groupby and aggregate must be the last transformation of $apply")
		}
		if p.tok.kind != tokIdent {
			p.unexpected("expected transformation filter, groupby or aggregate")
		}
		p.node()
		name, pos := strings.ToLower(p.tok.text), p.tok.pos
		p.advance()
		p.expect(tokLParen)
		p.enter()
		switch name {
		case "filter":
			a.filters = append(a.filters, p.expr())
		case "groupby":
			a.group = p.groupProperties()
			if p.tok.kind == tokComma {
				p.advance()
				if !p.isWord("aggregate") {
					p.unexpected("expected aggregate")
				}
				p.advance()
				p.expect(tokLParen)
				a.aggs = p.aggregateList()
				p.expect(tokRParen)
			}
		case "aggregate":
			a.aggs = p.aggregateList()
		default:
			failf(pos, "transformation %s is not supported; use filter, groupby or aggregate", name)
		}
		p.leave()
		p.expect(tokRParen)
	})
	return a
}

// groupProperties parses (name {, name}).
func (p *parser) groupProperties() (names []Segment) {
	p.expect(tokLParen)
	p.list(tokComma, func() { names = append(names, p.plainName("expected property name")) })
	p.expect(tokRParen)
	return names
}

// aggregateList parses item {, item} of aggregate().
func (p *parser) aggregateList() (items []aggSyntax) {
	p.list(tokComma, func() {
		var it aggSyntax
		if p.isWord("$count") {
			p.node()
			it.method = "$count"
			p.advance()
		} else {
			it.prop = p.plainName("expected property name or $count")
			if !p.isWord("with") || !p.tok.space {
				p.unexpected("expected with")
			}
			p.advance()
			if p.tok.kind != tokIdent {
				p.unexpected("expected aggregation method")
			}
			it.method = strings.ToLower(p.tok.text)
			if !slices.Contains([]string{"sum", "min", "max", "average", "countdistinct"}, it.method) {
				failf(p.tok.pos, "aggregation method %s is not supported; use sum, min, max, average or countdistinct", p.tok.text)
			}
			p.advance()
		}
		it.alias = p.asAlias()
		items = append(items, it)
	})
	return items
}

// asAlias parses "as name", the alias that ends an item of $compute or of aggregate.
func (p *parser) asAlias() Segment {
	if !p.isWord("as") || !p.tok.space {
		p.unexpected("expected as")
	}
	p.advance()
	return p.plainName("expected alias")
}

// plainName parses one identifier that is not a $-keyword nor followed by a
// path or call.
func (p *parser) plainName(expected string) Segment {
	if p.tok.kind != tokIdent || strings.HasPrefix(p.tok.text, "$") {
		p.unexpected(expected)
	}
	p.node()
	s := Segment{Name: p.tok.text, Pos: p.tok.pos}
	p.advance()
	if p.tok.kind == tokSlash || p.tok.kind == tokLParen {
		failf(p.tok.pos, "only property names of the entity can be used here")
	}
	return s
}

// aggregation is a resolved groupby or aggregate: how entities become rows.
type aggregation struct {
	group []*Property
	aggs  []aggregate
	cols  []column // the group properties, then the aliases: a row's cells
	order []rowKey
	limit int // Limits.MaxGroups
}

type aggregate struct {
	prop   *Property // nil for $count
	method string
}

// column is one member of a row: its name and the kind of its cells.
type column struct {
	name string
	kind EdmType
}

type rowKey struct {
	col  int
	desc bool
}

// row is one result of an aggregation: a cell is an int64 (decimals in units of
// 1/decimalScale), a string, a bool, a time.Time, or nil for null.
type row []any

// resolveApply binds a $apply to entity type t: its filters, and its aggregation
// (nil without groupby or aggregate).
func resolveApply(a *applySyntax, t *EntityType, c *compiler, limits Limits) ([]*Filter, *aggregation) {
	var filters []*Filter
	for _, e := range a.filters {
		filters = append(filters, compileFilter(e, t, c, nil))
	}
	if !a.aggregated() {
		return filters, nil
	}
	g := &aggregation{limit: limits.MaxGroups}
	names := map[string]bool{}
	name := func(s Segment) {
		k := strings.ToLower(s.Name)
		if names[k] {
			failf(s.Pos, "%s is named twice in the result of $apply", s.Name)
		}
		names[k] = true
	}
	prop := func(s Segment) *Property {
		pr := t.Property(s.Name)
		if pr == nil {
			failf(s.Pos, "unknown property %s on %s", s.Name, t.Name)
		}
		return pr
	}
	for _, s := range a.group {
		pr := prop(s)
		name(s)
		g.group = append(g.group, pr)
		g.cols = append(g.cols, column{pr.Name, pr.Type})
	}
	for _, it := range a.aggs {
		if t.Property(it.alias.Name) != nil || t.nav(it.alias.Name) != nil { // its type would contradict $metadata's
			failf(it.alias.Pos, "alias %s is already a property of %s", it.alias.Name, t.Name)
		}
		name(it.alias)
		ag := aggregate{method: it.method}
		kind := EdmInt64 // $count, countdistinct, and the sum of Int32 values
		if it.method != "$count" {
			ag.prop = prop(it.prop)
			pk := ag.prop.Type
			summed := it.method == "sum" || it.method == "average"
			if summed && pk != EdmInt32 && pk != EdmInt64 && pk != EdmDecimal {
				failf(it.prop.Pos, "%s of %s: %s is not numeric", it.method, ag.prop.Name, pk)
			}
			switch {
			case it.method == "average":
				kind = EdmDecimal // exact to four digits, as every decimal here
			case it.method == "min" || it.method == "max" || it.method == "sum" && pk != EdmInt32:
				kind = pk
			}
		}
		g.aggs = append(g.aggs, ag)
		g.cols = append(g.cols, column{it.alias.Name, kind})
	}
	return filters, g
}

// orderRows resolves $orderby against the names of the rows' columns.
func (g *aggregation) orderRows(items []OrderItem) {
	for _, it := range items {
		p, ok := it.Expr.(*Path)
		if !ok || len(p.Segments) != 1 {
			failf(it.Expr.Pos(), "after groupby or aggregate, $orderby takes only names of the result's properties")
		}
		col := slices.IndexFunc(g.cols, func(c column) bool { return strings.EqualFold(c.name, p.Segments[0].Name) })
		if col < 0 {
			failf(it.Expr.Pos(), "%s is not a property of the result of $apply", p.Segments[0].Name)
		}
		g.order = append(g.order, rowKey{col, it.Desc})
	}
}

// accumulator gathers the cells of one group.
type accumulator struct {
	key      row
	n        int64
	sums     []int64
	overflow []bool            // the sum went out of range: it is null
	extent   []any             // min and max so far
	seen     []map[string]bool // countdistinct: the values met, as JSON
}

// rows groups the entities of items that pass and aggregates each group, ordered
// by $orderby, then by the grouping properties; past Limits.MaxGroups it panics.
func (g *aggregation) rows(items []any, pass func(any) bool) []any {
	groups := map[string]*accumulator{}
	var order []*accumulator
	var kb []byte
	newAcc := func(x any) *accumulator {
		a := &accumulator{sums: make([]int64, len(g.aggs)), overflow: make([]bool, len(g.aggs)),
			extent: make([]any, len(g.aggs)), seen: make([]map[string]bool, len(g.aggs))}
		for _, p := range g.group {
			a.key = append(a.key, cell(p, x))
		}
		return a
	}
	for _, x := range items {
		if pass != nil && !pass(x) {
			continue
		}
		kb = kb[:0]
		for _, p := range g.group {
			kb = appendValue(append(kb, ','), p, x)
		}
		a := groups[string(kb)]
		if a == nil {
			if len(order) == g.limit {
				panic(&Error{Msg: "$apply makes more than " + strconv.Itoa(g.limit) + " groups"})
			}
			a = newAcc(x)
			groups[string(kb)] = a
			order = append(order, a)
		}
		a.add(g, x)
	}
	if len(order) == 0 && len(g.group) == 0 {
		order = append(order, newAcc(nil)) // aggregate over nothing is one row
	}
	out := make([]any, len(order))
	for i, a := range order {
		out[i] = a.row(g)
	}
	// By $orderby, then by the grouping properties, which no two groups share.
	slices.SortFunc(out, func(a, b any) int {
		for _, k := range g.order {
			c := compareCells(a.(row)[k.col], b.(row)[k.col])
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		for i := range g.group {
			if c := compareCells(a.(row)[i], b.(row)[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

func (a *accumulator) add(g *aggregation, x any) {
	a.n++
	for i, ag := range g.aggs {
		switch ag.method {
		case "sum", "average":
			if !a.overflow[i] {
				sum, ok := decAdd(a.sums[i], cell(ag.prop, x).(int64)) // exact
				a.sums[i], a.overflow[i] = sum, !ok
			}
		case "min", "max":
			v := cell(ag.prop, x)
			c := compareCells(v, a.extent[i])
			if a.extent[i] == nil || ag.method == "min" && c < 0 || ag.method == "max" && c > 0 {
				a.extent[i] = v
			}
		case "countdistinct":
			if a.seen[i] == nil {
				a.seen[i] = map[string]bool{}
			}
			a.seen[i][string(appendValue(nil, ag.prop, x))] = true
		}
	}
}

func (a *accumulator) row(g *aggregation) row {
	r := append(row{}, a.key...)
	for i, ag := range g.aggs {
		var v any
		switch ag.method {
		case "$count":
			v = a.n
		case "countdistinct":
			v = int64(len(a.seen[i]))
		case "min", "max":
			v = a.extent[i]
		case "sum":
			if !a.overflow[i] {
				v = a.sums[i]
			}
		case "average":
			sum, ok := a.sums[i], !a.overflow[i] && a.n > 0
			if ok && ag.prop.Type != EdmDecimal {
				sum, ok = decFromInt(sum)
			}
			if ok {
				if avg, fits := decDiv(sum, a.n*decimalScale); fits {
					v = avg
				}
			}
		}
		r = append(r, v)
	}
	return r
}

// cell is the value of property p of x as a row holds it.
func cell(p *Property, x any) any {
	switch p.Type {
	case EdmInt32, EdmInt64:
		return p.Int(x)
	case EdmDecimal:
		return p.Decimal(x)
	case EdmString:
		return p.String(x)
	case EdmBoolean:
		return p.Bool(x)
	default:
		return p.Time(x)
	}
}

// compareCells orders two cells of one column; null comes first.
func compareCells(a, b any) int {
	if a == nil || b == nil {
		return cmpBool(a != nil, b != nil)
	}
	switch a := a.(type) {
	case int64:
		return cmp.Compare(a, b.(int64))
	case string:
		return strings.Compare(a, b.(string))
	case bool:
		return cmpBool(a, b.(bool))
	case time.Time:
		return a.Compare(b.(time.Time))
	}
	return 0
}

// appendRow writes the members of a row and its closing brace, in format f
// (rows are no entities: full metadata adds nothing to them).
func (g *aggregation) appendRow(b []byte, r row, f format) []byte {
	for i, c := range g.cols {
		b = appendMember(b, i > 0, c.name)
		switch v := r[i].(type) {
		case nil:
			b = append(b, "null"...)
		case int64:
			b = f.appendNumber(b, v, c.kind)
		case string:
			b = appendString(b, v)
		case bool:
			b = strconv.AppendBool(b, v)
		case time.Time:
			b = appendTime(b, v)
		}
	}
	return append(b, '}')
}
