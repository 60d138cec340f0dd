package odata

// $compute (OData 4.01 Protocol, 11.2.5.3): arithmetic on numbers, each named by
// an alias that $select, $filter and $orderby use as a property, as in
// "$compute=price mul quantity as total&$select=id,total". In $filter and
// $orderby an alias stands for its expression; it is written only when $select
// names it (or is *).

// computeSyntax is one "expression as alias" of $compute, parsed.
type computeSyntax struct {
	expr  Expr
	alias Segment
}

// computed is one resolved $compute item: a number, Int or Decimal.
type computed struct {
	name string
	kind EdmType   // EdmInt64 or EdmDecimal
	f    fn[int64] // the value, in units of 1/decimalScale for EdmDecimal
}

// computeList parses item {, item} of $compute.
func (p *parser) computeList() (items []computeSyntax) {
	p.list(tokComma, func() {
		e := p.expr()
		items = append(items, computeSyntax{e, p.asAlias()})
	})
	return items
}

// resolveCompute checks each item against entity type t: a new alias, and an
// expression without lambda of type Int or Decimal.
func resolveCompute(items []computeSyntax, t *EntityType, c *compiler) []*computed {
	var out []*computed
	seen := map[string]bool{}
	for _, it := range items {
		name := it.alias.Name
		if t.Property(name) != nil || t.nav(name) != nil || seen[name] {
			failf(it.alias.Pos, "alias %s is already a property of %s or an earlier alias", name, t.Name)
		}
		seen[name] = true
		ck := &checker{root: t}
		typ := ck.check(it.expr)
		if ck.maxv > 0 {
			failf(it.expr.Pos(), "lambda expressions cannot be used in $compute")
		}
		if typ != TypeInt && typ != TypeDecimal {
			failf(it.expr.Pos(), "$compute takes arithmetic on Int and Decimal values; %s is %v", name, typ)
		}
		kind := EdmInt64
		if typ == TypeDecimal {
			kind = EdmDecimal
		}
		out = append(out, &computed{name: name, kind: kind, f: c.compile(it.expr).(fn[int64])})
	}
	return out
}

func aliasNamed(cs []*computed, name string) *computed {
	for _, c := range cs {
		if c.name == name {
			return c
		}
	}
	return nil
}

// appendComputed writes the selected computed values of x, after a comma if comma is set.
func (q *Query) appendComputed(b []byte, x any, comma bool) []byte {
	for i, c := range q.computedSel {
		b = appendMember(b, comma || i > 0, c.name)
		if v, ok := c.f(x, nil); ok {
			b = q.out.appendNumber(b, v, c.kind)
		} else {
			b = append(b, "null"...)
		}
	}
	return b
}
