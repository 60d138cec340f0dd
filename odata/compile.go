package odata

import (
	"math"
	"time"
)

// fn is a compiled expression of Go type T over entity it, vars holding the
// values of the lambda variables; the second result is false for null.
type fn[T any] func(it any, vars []any) (T, bool)

// compiler turns a checked expression tree into closures over the model's
// typed getters: Bool is fn[bool], Int and Decimal fn[int64], Double
// fn[float64], String fn[string], Date and DateTimeOffset fn[time.Time], Entity
// fn[any], Collection fn[[]any].
type compiler struct {
	now  time.Time
	eval *evaluation // where fetched collections and built strings are counted; nil counts nothing
}

func (c *compiler) compile(e Expr) any {
	switch e := e.(type) {
	case *Literal:
		return c.literal(e, e.Kind)
	case *Path:
		return c.path(e)
	case *Lambda:
		return c.lambda(e)
	case *Call:
		return e.fn.build(c, e)
	case *Unary:
		return c.unary(e)
	case *Binary:
		return c.binary(e)
	case *In:
		return c.in(e)
	}
	panic("odata: unexpected node")
}

// as compiles e converted to type t (numeric widening, Date to DateTimeOffset).
func (c *compiler) as(e Expr, t Type) any {
	from := e.Type()
	if l, ok := e.(*Literal); ok {
		return c.literal(l, t)
	}
	f := c.compile(e)
	switch {
	case from == t, from == TypeDate && t == TypeDateTimeOffset:
		return f
	case from == TypeInt && t == TypeDecimal:
		g := f.(fn[int64])
		return fn[int64](func(it any, v []any) (int64, bool) {
			x, ok := g(it, v)
			if !ok {
				return 0, false
			}
			return decFromInt(x)
		})
	case from == TypeInt && t == TypeDouble:
		return map1(f.(fn[int64]), func(x int64) float64 { return float64(x) })
	case from == TypeDecimal && t == TypeDouble:
		return map1(f.(fn[int64]), decToFloat)
	}
	panic("odata: bad conversion " + from.String() + " to " + t.String())
}

// constant returns the value of a literal converted to type t; ok is false for
// null or a value that does not fit t.
func constant(l *Literal, t Type) (v any, ok bool) {
	switch {
	case l.Kind == TypeNull:
		return nil, false
	case t == TypeBool:
		return l.Bool, true
	case t == TypeString:
		return l.Str, true
	case t == TypeDate || t == TypeDateTimeOffset:
		return l.Time, true
	case t == TypeInt:
		return l.Int, true
	case t == TypeDecimal && l.Kind == TypeInt:
		return decFromInt(l.Int)
	case t == TypeDecimal:
		return l.Int, true
	case t == TypeDouble && l.Kind == TypeInt:
		return float64(l.Int), true
	case t == TypeDouble && l.Kind == TypeDecimal:
		return decToFloat(l.Int), true
	case t == TypeDouble:
		return l.Float, true
	}
	return nil, false
}

func constFn[T any](v any, ok bool) fn[T] {
	x, _ := v.(T)
	return func(any, []any) (T, bool) { return x, ok }
}

func (c *compiler) literal(l *Literal, t Type) any {
	v, ok := constant(l, t)
	switch t {
	case TypeBool:
		return constFn[bool](v, ok)
	case TypeInt, TypeDecimal:
		return constFn[int64](v, ok)
	case TypeDouble:
		return constFn[float64](v, ok)
	case TypeString:
		return constFn[string](v, ok)
	case TypeDate, TypeDateTimeOffset:
		return constFn[time.Time](v, ok)
	case TypeEntity:
		return constFn[any](nil, false)
	}
	return constFn[[]any](nil, false)
}

// direct reports whether p is a property of the current entity, whose getter
// can be called directly.
func direct(p *Path) bool { return p.Var < 0 && len(p.Navs) == 0 && p.Prop != nil }

// entity compiles the entity a path's navigations lead to.
func (c *compiler) entity(p *Path, navs []*NavProperty) fn[any] {
	f := fn[any](func(it any, _ []any) (any, bool) { return it, true })
	if p.Var >= 0 {
		i := p.Var
		f = func(_ any, v []any) (any, bool) { return v[i], true }
	}
	for _, n := range navs {
		if n.Collection {
			break
		}
		g, one := f, n.One
		f = func(it any, v []any) (any, bool) {
			x, ok := g(it, v)
			if !ok {
				return nil, false
			}
			return one(x)
		}
	}
	return f
}

func (c *compiler) path(p *Path) any {
	if p.alias != nil {
		return p.alias.f
	}
	if direct(p) {
		return propFn(p.Prop, nil)
	}
	navs := p.Navs
	var coll *NavProperty
	if len(navs) > 0 && navs[len(navs)-1].Collection {
		coll = navs[len(navs)-1]
		navs = navs[:len(navs)-1]
	}
	ent := c.entity(p, navs)
	switch {
	case p.Prop != nil:
		return propFn(p.Prop, ent)
	case coll == nil:
		return ent
	}
	many, eval := coll.Many, c.eval
	members := fn[[]any](func(it any, v []any) ([]any, bool) {
		x, ok := ent(it, v)
		if !ok {
			return nil, false
		}
		items := many(x)
		eval.visit(len(items))
		return items, true
	})
	if !p.Count {
		return members
	}
	var keep fn[bool]
	if p.CountFilter != nil {
		keep = c.compile(p.CountFilter).(fn[bool])
	}
	return fn[int64](func(it any, v []any) (int64, bool) {
		items, ok := members(it, v)
		if !ok || keep == nil {
			return int64(len(items)), ok
		}
		n := int64(0)
		for _, y := range items {
			if b, ok := keep(y, nil); b && ok {
				n++
			}
		}
		return n, true
	})
}

// propFn compiles property p of the entity ent leads to; with ent nil, of the
// current entity, calling the getter directly.
func propFn(p *Property, ent fn[any]) any {
	switch p.Type {
	case EdmInt32, EdmInt64:
		return through(ent, p.Int)
	case EdmDecimal:
		return through(ent, p.Decimal)
	case EdmString:
		return through(ent, p.String)
	case EdmBoolean:
		return through(ent, p.Bool)
	}
	return through(ent, p.Time)
}

func through[T any](ent fn[any], get func(any) T) fn[T] {
	if ent == nil {
		return func(it any, _ []any) (T, bool) { return get(it), true }
	}
	return func(it any, v []any) (T, bool) {
		x, ok := ent(it, v)
		if !ok {
			var zero T
			return zero, false
		}
		return get(x), true
	}
}

func (c *compiler) lambda(l *Lambda) any {
	src := c.compile(l.Source).(fn[[]any])
	if l.Body == nil {
		return fn[bool](func(it any, v []any) (bool, bool) {
			items, _ := src(it, v)
			return len(items) > 0, true
		})
	}
	body := c.compile(l.Body).(fn[bool])
	d, all := l.Depth, l.All
	// any: the body is true for some member; all: false or null for none.
	return fn[bool](func(it any, v []any) (bool, bool) {
		items, _ := src(it, v)
		for _, x := range items {
			v[d] = x
			b, ok := body(it, v)
			if all && (!ok || !b) {
				return false, true
			}
			if !all && ok && b {
				return true, true
			}
		}
		return all, true
	})
}

func (c *compiler) unary(u *Unary) any {
	if u.Op == "not" {
		x := c.as(u.X, TypeBool).(fn[bool])
		return fn[bool](func(it any, v []any) (bool, bool) {
			b, ok := x(it, v)
			return !b, ok
		})
	}
	if u.Type() == TypeDouble {
		x := c.compile(u.X).(fn[float64])
		return fn[float64](func(it any, v []any) (float64, bool) {
			f, ok := x(it, v)
			return -f, ok
		})
	}
	x := c.compile(u.X).(fn[int64])
	return fn[int64](func(it any, v []any) (int64, bool) {
		i, ok := x(it, v)
		return -i, ok && i != math.MinInt64
	})
}

func (c *compiler) binary(b *Binary) any {
	switch b.Op {
	case "and", "or":
		return c.logical(b)
	case "eq", "ne", "gt", "ge", "lt", "le":
		return c.comparison(b.Op, b.X, b.Y, b.num)
	}
	return c.arith(b)
}

// logical implements OData's three-valued and/or.
func (c *compiler) logical(b *Binary) any {
	x := c.as(b.X, TypeBool).(fn[bool])
	y := c.as(b.Y, TypeBool).(fn[bool])
	decides := b.Op == "or" // the operand value that decides alone: false for and, true for or
	return fn[bool](func(it any, v []any) (bool, bool) {
		p, pok := x(it, v)
		if pok && p == decides {
			return decides, true
		}
		q, qok := y(it, v)
		if qok && q == decides {
			return decides, true
		}
		return !decides, pok && qok
	})
}
