package odata

import (
	"fmt"
	"strings"
)

// function is a built-in function: its overloads and how to compile a call.
type function struct {
	sigs  []signature
	build func(c *compiler, call *Call) any
}

type signature struct {
	params []Type
	result Type
}

func sig(result Type, params ...Type) signature { return signature{params, result} }

var functions map[string]*function

func init() {
	functions = map[string]*function{}
	add := func(name string, build func(*compiler, *Call) any, sigs ...signature) {
		functions[name] = &function{sigs: sigs, build: build}
	}
	s, i, b := TypeString, TypeInt, TypeBool
	add("contains", buildStrPred, sig(b, s, s))
	add("startswith", buildStrPred, sig(b, s, s))
	add("endswith", buildStrPred, sig(b, s, s))
	add("length", buildLength, sig(i, s))
	add("indexof", buildIndexOf, sig(i, s, s))
	add("tolower", buildStrMap, sig(s, s))
	add("toupper", buildStrMap, sig(s, s))
	add("trim", buildStrMap, sig(s, s))
	add("concat", buildConcat, sig(s, s, s))
	add("substring", buildSubstring, sig(s, s, i), sig(s, s, i, i))
	for _, n := range []string{"year", "month", "day"} {
		add(n, buildDatePart, sig(i, TypeDateTimeOffset), sig(i, TypeDate))
	}
	for _, n := range []string{"hour", "minute", "second"} {
		add(n, buildDatePart, sig(i, TypeDateTimeOffset))
	}
	add("date", buildDate, sig(TypeDate, TypeDateTimeOffset))
	for _, n := range []string{"round", "floor", "ceiling"} {
		add(n, buildRounding, sig(TypeDecimal, TypeDecimal), sig(TypeDouble, TypeDouble))
	}
	add("now", buildNow, sig(TypeDateTimeOffset))
}

// checker resolves names and computes types; vars are the lambda variables in
// scope, innermost last.
type checker struct {
	root    *EntityType
	vars    []rangeVar
	maxv    int         // deepest lambda nesting seen
	aliases []*computed // those of $compute a one-segment path may name
}

type rangeVar struct {
	name string
	typ  *EntityType
}

func (c *checker) checkBool(e Expr) {
	if t := c.check(e); t != TypeBool {
		failf(e.Pos(), "expression must be Boolean, not %v", t)
	}
}

// check computes and records the type of e.
func (c *checker) check(e Expr) Type {
	var t Type
	switch e := e.(type) {
	case *Literal:
		t = e.Kind
	case *Path:
		if a := aliasNamed(c.aliases, e.Segments[0].Name); a != nil && len(e.Segments) == 1 {
			e.alias, e.Var, t = a, -1, edmTypes[a.kind].typ
		} else {
			t = c.path(e)
		}
	case *Lambda:
		t = c.lambda(e)
	case *Call:
		t = c.call(e)
	case *Unary:
		t = c.check(e.X)
		switch {
		case e.Op == "not" && (t == TypeBool || t == TypeNull):
			t = TypeBool
		case e.Op != "-" || !t.numeric():
			failf(e.pos, "operator %s cannot be applied to %v", e.Op, t)
		}
	case *Binary:
		t = c.binary(e)
	case *In:
		t = c.in(e)
	default:
		panic(fmt.Sprintf("odata: unexpected node %T", e))
	}
	e.(interface{ setTyp(Type) }).setTyp(t) // every node embeds exprBase
	return t
}

// promote returns the common type of two operands: Int -> Decimal -> Double,
// Date -> DateTimeOffset, and null takes the other operand's type.
func promote(a, b Type) (Type, bool) {
	switch {
	case a == TypeNull:
		return b, b != TypeCollection
	case b == TypeNull:
		return a, a != TypeCollection
	case a.numeric() && b.numeric():
		return max(a, b), true
	case (a == TypeDate || a == TypeDateTimeOffset) && (b == TypeDate || b == TypeDateTimeOffset):
		return max(a, b), true
	case a == b && (a == TypeString || a == TypeBool):
		return a, true
	}
	return TypeInvalid, false
}

func (c *checker) binary(e *Binary) Type {
	x, y := c.check(e.X), c.check(e.Y)
	switch e.Op {
	case "and", "or":
		for _, t := range []Type{x, y} {
			if t != TypeBool && t != TypeNull {
				failf(e.pos, "operator %s requires Boolean operands, not %v and %v", e.Op, x, y)
			}
		}
		return TypeBool
	case "eq", "ne", "gt", "ge", "lt", "le":
		t, ok := promote(x, y)
		equality := e.Op == "eq" || e.Op == "ne"
		if equality && (x == TypeEntity && y == TypeNull || x == TypeNull && y == TypeEntity) {
			t, ok = TypeEntity, true
		} else if t == TypeEntity || !equality && (t == TypeBool || t == TypeNull) {
			ok = false
		}
		if !ok {
			failf(e.pos, "operator %s cannot compare %v with %v", e.Op, x, y)
		}
		e.num = t
		return TypeBool
	case "has":
		failf(e.pos, "operator has requires an enumeration type; this model has none")
	}
	t, ok := promote(x, y)
	if !ok || !t.numeric() {
		failf(e.pos, "operator %s cannot be applied to %v and %v", e.Op, x, y)
	}
	if e.Op == "divby" && t == TypeInt {
		t = TypeDecimal
	}
	e.num = t
	return t
}

func (c *checker) in(e *In) Type {
	t := c.check(e.X)
	if t == TypeEntity || t == TypeCollection {
		failf(e.pos, "operator in cannot be applied to %v", t)
	}
	for _, item := range e.List {
		it := c.check(item)
		u, ok := promote(t, it)
		if !ok || u == TypeEntity {
			failf(item.Pos(), "list item of type %v cannot be compared with %v", it, t)
		}
		t = u
	}
	e.num = t
	return TypeBool
}

func (c *checker) call(e *Call) Type {
	fn := functions[e.Name]
	if fn == nil {
		failf(e.pos, "unknown function %s", e.Name)
	}
	args := make([]Type, len(e.Args))
	for i, a := range e.Args {
		args[i] = c.check(a)
	}
	arity := false
	for _, s := range fn.sigs {
		if len(s.params) != len(args) {
			continue
		}
		arity = true
		if matches(s.params, args) {
			e.fn = fn
			return s.result
		}
	}
	if !arity {
		var ns []string
		for _, s := range fn.sigs {
			ns = append(ns, fmt.Sprint(len(s.params)))
		}
		failf(e.pos, "function %s takes %s arguments, not %d", e.Name, strings.Join(ns, " or "), len(args))
	}
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.String()
	}
	failf(e.pos, "function %s cannot be applied to (%s)", e.Name, strings.Join(names, ", "))
	return TypeInvalid
}

// matches reports whether arguments of types args can be passed to params.
func matches(params, args []Type) bool {
	for i, p := range params {
		a := args[i]
		if a == p || a == TypeNull {
			continue
		}
		// Only numeric widening: hour(2024-01-01) is an error, not midnight.
		if a.numeric() && p.numeric() && a < p {
			continue
		}
		return false
	}
	return true
}

// path resolves a member path from the current entity or a lambda variable.
func (c *checker) path(p *Path) Type {
	segs := p.Segments
	cur := c.root
	p.Var = -1
	first := segs[0].Name
	switch {
	case c.lookupVar(first) >= 0:
		p.Var = c.lookupVar(first)
		cur = c.vars[p.Var].typ
		segs = segs[1:]
	case first == "$it":
		segs = segs[1:]
	case strings.HasPrefix(first, "$"):
		failf(segs[0].Pos, "%s is not supported", first)
	}
	if len(segs) == 0 {
		return TypeEntity
	}
	for i, s := range segs {
		last := i == len(segs)-1
		if s.Name == "$count" {
			failf(s.Pos, "$count must follow a collection navigation property")
		}
		if prop := cur.Property(s.Name); prop != nil {
			if !last {
				failf(segs[i+1].Pos, "cannot navigate from primitive property %s", prop.Name)
			}
			p.Prop = prop
			return edmTypes[prop.Type].typ
		}
		nav := cur.nav(s.Name)
		if nav == nil {
			failf(s.Pos, "unknown property %s on %s", s.Name, cur.Name)
		}
		p.Navs = append(p.Navs, nav)
		if nav.Collection {
			switch {
			case last:
				return TypeCollection
			case segs[i+1].Name == "$count" && i+1 == len(segs)-1:
				p.Count = true
				if p.CountFilter != nil {
					// The condition is on the related entities alone: their own checker.
					sub := &checker{root: nav.Target}
					sub.checkBool(p.CountFilter)
					if sub.maxv > 0 {
						failf(p.CountFilter.Pos(), "any and all cannot be used in $count($filter=...)")
					}
				}
				return TypeInt
			}
			failf(segs[i+1].Pos, "collection %s must be followed by any, all or $count", nav.Name)
		}
		cur = nav.Target
	}
	return TypeEntity
}

func (c *checker) lookupVar(name string) int {
	for i := len(c.vars) - 1; i >= 0; i-- {
		if c.vars[i].name == name {
			return i
		}
	}
	return -1
}

func (c *checker) lambda(l *Lambda) Type {
	if t := c.path(l.Source); t != TypeCollection || l.Source.Count {
		failf(l.pos, "%s requires a collection navigation property", map[bool]string{true: "all", false: "any"}[l.All])
	}
	l.Source.typ = TypeCollection
	if l.Body == nil {
		return TypeBool
	}
	if c.lookupVar(l.Var) >= 0 || l.Var == "$it" {
		failf(l.pos, "lambda variable %s is already defined", l.Var)
	}
	nav := l.Source.Navs[len(l.Source.Navs)-1]
	l.Depth = len(c.vars)
	c.vars = append(c.vars, rangeVar{l.Var, nav.Target})
	c.maxv = max(c.maxv, len(c.vars))
	c.checkBool(l.Body)
	c.vars = c.vars[:len(c.vars)-1]
	return TypeBool
}
