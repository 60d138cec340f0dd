package odata

import (
	"cmp"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// fn is a compiled expression of Go type T. vars holds the current values of
// the lambda range variables. The second result is false when the value is
// null (a missing single navigation, a null literal, division by zero).
type fn[T any] func(it any, vars []any) (T, bool)

// compiler turns a checked expression tree into closures over the model's
// typed getters. The Go type of a compiled expression follows its Type:
// Bool fn[bool]; Int and Decimal fn[int64]; Double fn[float64]; String
// fn[string]; Date and DateTimeOffset fn[time.Time]; Entity fn[any];
// Collection fn[[]any].
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

// as compiles e converted to type t (numeric widening, Date to
// DateTimeOffset, null to any type).
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
		g := f.(fn[int64])
		return fn[float64](func(it any, v []any) (float64, bool) {
			x, ok := g(it, v)
			return float64(x), ok
		})
	case from == TypeDecimal && t == TypeDouble:
		g := f.(fn[int64])
		return fn[float64](func(it any, v []any) (float64, bool) {
			x, ok := g(it, v)
			return decToFloat(x), ok
		})
	}
	panic("odata: bad conversion " + from.String() + " to " + t.String())
}

// constant returns the value of a literal converted to type t; ok is false
// for null or when the value does not fit t.
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
		d, ok := decFromInt(l.Int)
		return d, ok
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
	return zeroFn(t, v, ok)
}

// zeroFn returns a constant function of the Go type for t.
func zeroFn(t Type, v any, ok bool) any {
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

// direct reports whether p reads a structural property of the current
// entity without navigation, so its getter can be called directly.
func direct(p *Path) bool { return p.Var < 0 && len(p.Navs) == 0 && p.Prop != nil }

// entity compiles the entity a path's navigations lead to.
func (c *compiler) entity(p *Path, navs []*NavProperty) fn[any] {
	start := fn[any](func(it any, _ []any) (any, bool) { return it, true })
	if p.Var >= 0 {
		i := p.Var
		start = func(_ any, v []any) (any, bool) { return v[i], true }
	}
	f := start
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
	if direct(p) {
		return propFn(p.Prop)
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
		return viaEntity(ent, p.Prop)
	case p.Count:
		many, eval := coll.Many, c.eval
		var keep fn[bool]
		if p.CountFilter != nil {
			keep = c.compile(p.CountFilter).(fn[bool])
		}
		return fn[int64](func(it any, v []any) (int64, bool) {
			x, ok := ent(it, v)
			if !ok {
				return 0, false
			}
			items := many(x)
			eval.visit(len(items))
			if keep == nil {
				return int64(len(items)), true
			}
			n := int64(0)
			for _, y := range items {
				if b, ok := keep(y, nil); b && ok {
					n++
				}
			}
			return n, true
		})
	case coll != nil:
		many, eval := coll.Many, c.eval
		return fn[[]any](func(it any, v []any) ([]any, bool) {
			x, ok := ent(it, v)
			if !ok {
				return nil, false
			}
			items := many(x)
			eval.visit(len(items))
			return items, true
		})
	}
	return ent
}

func getter[T any](get func(any) T) fn[T] {
	return func(it any, _ []any) (T, bool) { return get(it), true }
}

func propFn(p *Property) any {
	switch p.Type {
	case EdmInt32, EdmInt64:
		return getter(p.Int)
	case EdmDecimal:
		return getter(p.Decimal)
	case EdmString:
		return getter(p.String)
	case EdmBoolean:
		return getter(p.Bool)
	}
	return getter(p.Time)
}

func through[T any](ent fn[any], get func(any) T) fn[T] {
	return func(it any, v []any) (T, bool) {
		x, ok := ent(it, v)
		if !ok {
			var zero T
			return zero, false
		}
		return get(x), true
	}
}

func viaEntity(ent fn[any], p *Property) any {
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
	// OData: any is true if the body is true for some member; all is true
	// unless the body is false (or null) for some member.
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
	switch u.Type() {
	case TypeDouble:
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

// logical implements OData's three-valued and/or: null and false is false,
// null or true is true, otherwise null propagates.
func (c *compiler) logical(b *Binary) any {
	x := c.as(b.X, TypeBool).(fn[bool])
	y := c.as(b.Y, TypeBool).(fn[bool])
	if b.Op == "and" {
		return fn[bool](func(it any, v []any) (bool, bool) {
			p, pok := x(it, v)
			if pok && !p {
				return false, true
			}
			q, qok := y(it, v)
			if qok && !q {
				return false, true
			}
			return true, pok && qok
		})
	}
	return fn[bool](func(it any, v []any) (bool, bool) {
		p, pok := x(it, v)
		if pok && p {
			return true, true
		}
		q, qok := y(it, v)
		if qok && q {
			return true, true
		}
		return false, pok && qok
	})
}

type relOp int

const (
	opEq relOp = iota
	opNe
	opGt
	opGe
	opLt
	opLe
)

var relOps = map[string]relOp{"eq": opEq, "ne": opNe, "gt": opGt, "ge": opGe, "lt": opLt, "le": opLe}

// holds reports whether the comparison result c (-1, 0, 1) satisfies op.
func (op relOp) holds(c int) bool {
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	case opLt:
		return c < 0
	}
	return c <= 0
}

// nulls is the result of a comparison with a null operand: null eq null is
// true, null ne x is true, ordering comparisons with null are false.
func (op relOp) nulls(bothNull bool) bool {
	switch op {
	case opEq:
		return bothNull
	case opNe:
		return !bothNull
	}
	return false
}

// compareFn compares two compiled operands of the same Go type.
func compareFn[T any](op relOp, x, y fn[T], cmpf func(a, b T) int) fn[bool] {
	return func(it any, v []any) (bool, bool) {
		a, aok := x(it, v)
		b, bok := y(it, v)
		if !aok || !bok {
			return op.nulls(aok == bok), true
		}
		return op.holds(cmpf(a, b)), true
	}
}

// compareConst compares a compiled operand with a constant, calling the
// property getter directly when the operand is a plain property.
func compareConst[T any](op relOp, x fn[T], get func(any) T, k T, cmpf func(a, b T) int) fn[bool] {
	if get != nil {
		return func(it any, _ []any) (bool, bool) { return op.holds(cmpf(get(it), k)), true }
	}
	return func(it any, v []any) (bool, bool) {
		a, ok := x(it, v)
		if !ok {
			return op.nulls(false), true
		}
		return op.holds(cmpf(a, k)), true
	}
}

// flip mirrors an ordering operator so that "k lt x" becomes "x gt k".
func (op relOp) flip() relOp {
	switch op {
	case opGt:
		return opLt
	case opGe:
		return opLe
	case opLt:
		return opGt
	case opLe:
		return opGe
	}
	return op
}

func compareTyped[T any](c *compiler, op relOp, x, y Expr, t Type, cmpf func(a, b T) int, get func(*Property) func(any) T) fn[bool] {
	if _, ok := x.(*Literal); ok {
		if _, ok := y.(*Literal); !ok {
			x, y, op = y, x, op.flip()
		}
	}
	if l, ok := y.(*Literal); ok {
		if k, ok := constant(l, t); ok {
			var g func(any) T
			if p, ok := x.(*Path); ok && direct(p) && edmToType(p.Prop.Type) == t {
				g = get(p.Prop)
			}
			return compareConst(op, c.as(x, t).(fn[T]), g, k.(T), cmpf)
		}
	}
	return compareFn(op, c.as(x, t).(fn[T]), c.as(y, t).(fn[T]), cmpf)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

func cmpTime(a, b time.Time) int { return a.Compare(b) }

func (c *compiler) comparison(name string, x, y Expr, t Type) fn[bool] {
	op := relOps[name]
	xt, yt := x.Type(), y.Type()
	switch {
	case t == TypeNull:
		return constFn[bool](op.nulls(true), true)
	case t == TypeEntity:
		e := x
		if xt == TypeNull {
			e = y
		}
		f := c.compile(e).(fn[any])
		return fn[bool](func(it any, v []any) (bool, bool) {
			_, ok := f(it, v)
			return op.nulls(!ok), true
		})
	case t == TypeDecimal && (xt == TypeInt || yt == TypeInt) && xt != TypeNull && yt != TypeNull:
		// Compare integers with decimals exactly, without scaling the
		// integer (which could overflow).
		if xt == TypeInt {
			x, y, op = y, x, op.flip()
		}
		dx, iy := c.compile(x).(fn[int64]), c.compile(y).(fn[int64])
		if l, ok := y.(*Literal); ok {
			k := l.Int
			if p, ok := x.(*Path); ok && direct(p) {
				get := p.Prop.Decimal
				return func(it any, _ []any) (bool, bool) { return op.holds(cmpDecInt(get(it), k)), true }
			}
			iy = constFn[int64](k, true)
		}
		return compareFn(op, dx, iy, cmpDecInt)
	}
	switch t {
	case TypeBool:
		return compareTyped(c, op, x, y, t, cmpBool, func(p *Property) func(any) bool { return p.Bool })
	case TypeInt:
		return compareTyped(c, op, x, y, t, cmp.Compare[int64], func(p *Property) func(any) int64 { return p.Int })
	case TypeDecimal:
		return compareTyped(c, op, x, y, t, cmp.Compare[int64], func(p *Property) func(any) int64 { return p.Decimal })
	case TypeDouble:
		return compareTyped(c, op, x, y, t, cmp.Compare[float64], nil)
	case TypeString:
		return compareTyped(c, op, x, y, t, strings.Compare, func(p *Property) func(any) string { return p.String })
	}
	return compareTyped(c, op, x, y, t, cmpTime, func(p *Property) func(any) time.Time { return p.Time })
}

// in is compiled as a disjunction of eq comparisons.
func (c *compiler) in(e *In) any {
	if len(e.List) == 0 {
		return constFn[bool](false, true)
	}
	var f fn[bool]
	for _, item := range e.List {
		g := c.comparison("eq", e.X, item, e.num)
		if f == nil {
			f = g
			continue
		}
		h := f
		f = func(it any, v []any) (bool, bool) {
			if b, _ := h(it, v); b {
				return true, true
			}
			return g(it, v)
		}
	}
	return f
}

func arith[T any](x, y fn[T], op func(a, b T) (T, bool)) fn[T] {
	return func(it any, v []any) (T, bool) {
		a, aok := x(it, v)
		b, bok := y(it, v)
		if !aok || !bok {
			var zero T
			return zero, false
		}
		return op(a, b)
	}
}

var intOps = map[string]func(a, b int64) (int64, bool){
	"add": func(a, b int64) (int64, bool) { return decAdd(a, b) },
	"sub": func(a, b int64) (int64, bool) { return decSub(a, b) },
	"mul": func(a, b int64) (int64, bool) {
		if a == 0 || b == 0 {
			return 0, true
		}
		c := a * b
		return c, c/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
	},
	"div": func(a, b int64) (int64, bool) {
		if b == 0 || a == math.MinInt64 && b == -1 {
			return 0, false
		}
		return a / b, true
	},
	"mod": func(a, b int64) (int64, bool) {
		if b == 0 {
			return 0, false
		}
		if b == -1 {
			return 0, true
		}
		return a % b, true
	},
}

var decOps = map[string]func(a, b int64) (int64, bool){
	"add": decAdd, "sub": decSub, "mul": decMul, "div": decDiv, "divby": decDiv, "mod": decMod,
}

var floatOps = map[string]func(a, b float64) (float64, bool){
	"add":   func(a, b float64) (float64, bool) { return a + b, true },
	"sub":   func(a, b float64) (float64, bool) { return a - b, true },
	"mul":   func(a, b float64) (float64, bool) { return a * b, true },
	"div":   func(a, b float64) (float64, bool) { return a / b, true },
	"divby": func(a, b float64) (float64, bool) { return a / b, true },
	"mod":   func(a, b float64) (float64, bool) { return math.Mod(a, b), true },
}

func (c *compiler) arith(b *Binary) any {
	t := b.num
	switch t {
	case TypeInt:
		return arith(c.as(b.X, t).(fn[int64]), c.as(b.Y, t).(fn[int64]), intOps[b.Op])
	case TypeDecimal:
		return arith(c.as(b.X, t).(fn[int64]), c.as(b.Y, t).(fn[int64]), decOps[b.Op])
	}
	return arith(c.as(b.X, t).(fn[float64]), c.as(b.Y, t).(fn[float64]), floatOps[b.Op])
}

// Built-in functions. Arguments are converted to the parameter types of the
// overload the checker picked; a null argument yields null.

func map1[A, R any](x fn[A], f func(A) R) fn[R] {
	return func(it any, v []any) (R, bool) {
		a, ok := x(it, v)
		if !ok {
			var zero R
			return zero, false
		}
		return f(a), true
	}
}

func map2[A, B, R any](x fn[A], y fn[B], f func(A, B) R) fn[R] {
	return func(it any, v []any) (R, bool) {
		a, aok := x(it, v)
		b, bok := y(it, v)
		if !aok || !bok {
			var zero R
			return zero, false
		}
		return f(a, b), true
	}
}

func strArg(c *compiler, call *Call, i int) fn[string] {
	return c.as(call.Args[i], TypeString).(fn[string])
}

func buildStrPred(c *compiler, call *Call) any {
	f := map[string]func(string, string) bool{
		"contains": strings.Contains, "startswith": strings.HasPrefix, "endswith": strings.HasSuffix,
	}[call.Name]
	x := strArg(c, call, 0)
	if l, ok := call.Args[1].(*Literal); ok && l.Kind == TypeString {
		k := l.Str
		if inner, ok := call.Args[0].(*Call); ok && inner.Name == "tolower" && isLower(k) {
			// contains(tolower(x),'lit'): fold case while searching instead
			// of building a lower-cased copy of every value.
			g := map[string]func(string, string) bool{
				"contains": containsFold, "startswith": hasPrefixFold, "endswith": hasSuffixFold,
			}[call.Name]
			if p, ok := inner.Args[0].(*Path); ok && direct(p) {
				get := p.Prop.String
				return fn[bool](func(it any, _ []any) (bool, bool) { return g(get(it), k), true })
			}
			return map1(strArg(c, inner, 0), func(a string) bool { return g(a, k) })
		}
		if p, ok := call.Args[0].(*Path); ok && direct(p) {
			get := p.Prop.String
			return fn[bool](func(it any, _ []any) (bool, bool) { return f(get(it), k), true })
		}
		return map1(x, func(a string) bool { return f(a, k) })
	}
	return map2(x, strArg(c, call, 1), f)
}

func buildLength(c *compiler, call *Call) any {
	return map1(strArg(c, call, 0), func(s string) int64 { return int64(utf8.RuneCountInString(s)) })
}

func buildIndexOf(c *compiler, call *Call) any {
	return map2(strArg(c, call, 0), strArg(c, call, 1), func(s, sub string) int64 {
		i := strings.Index(s, sub)
		if i < 0 {
			return -1
		}
		return int64(utf8.RuneCountInString(s[:i]))
	})
}

func buildStrMap(c *compiler, call *Call) any {
	if call.Name == "trim" {
		return map1(strArg(c, call, 0), strings.TrimSpace) // a substring: nothing is built
	}
	f := map[string]func(string) string{"tolower": strings.ToLower, "toupper": strings.ToUpper}[call.Name]
	eval := c.eval
	return map1(strArg(c, call, 0), func(s string) string {
		eval.build(len(s))
		return f(s)
	})
}

func buildConcat(c *compiler, call *Call) any {
	eval := c.eval
	return map2(strArg(c, call, 0), strArg(c, call, 1), func(a, b string) string {
		eval.build(len(a) + len(b))
		return a + b
	})
}

// substring counts characters (runes). A start past the end yields "", a
// negative start counts from 0, and a negative length yields "".
func buildSubstring(c *compiler, call *Call) any {
	s := strArg(c, call, 0)
	start := c.as(call.Args[1], TypeInt).(fn[int64])
	if len(call.Args) == 2 {
		return map2(s, start, func(s string, i int64) string { return substr(s, i, math.MaxInt64) })
	}
	n := c.as(call.Args[2], TypeInt).(fn[int64])
	return fn[string](func(it any, v []any) (string, bool) {
		str, ok1 := s(it, v)
		i, ok2 := start(it, v)
		k, ok3 := n(it, v)
		if !ok1 || !ok2 || !ok3 {
			return "", false
		}
		return substr(str, i, k), true
	})
}

func substr(s string, start, n int64) string {
	if n <= 0 {
		return ""
	}
	start = max(start, 0)
	var i int64
	b := -1
	for off := range s {
		if i == start {
			b = off
		}
		if b >= 0 && i == start+n {
			return s[b:off]
		}
		i++
	}
	if b < 0 {
		return ""
	}
	return s[b:]
}

func buildDatePart(c *compiler, call *Call) any {
	f := map[string]func(time.Time) int64{
		"year":   func(t time.Time) int64 { return int64(t.Year()) },
		"month":  func(t time.Time) int64 { return int64(t.Month()) },
		"day":    func(t time.Time) int64 { return int64(t.Day()) },
		"hour":   func(t time.Time) int64 { return int64(t.Hour()) },
		"minute": func(t time.Time) int64 { return int64(t.Minute()) },
		"second": func(t time.Time) int64 { return int64(t.Second()) },
	}[call.Name]
	return map1(c.as(call.Args[0], TypeDateTimeOffset).(fn[time.Time]), f)
}

func buildDate(c *compiler, call *Call) any {
	return map1(c.as(call.Args[0], TypeDateTimeOffset).(fn[time.Time]), func(t time.Time) time.Time {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	})
}

func buildRounding(c *compiler, call *Call) any {
	if call.Type() == TypeDouble {
		f := map[string]func(float64) float64{"round": math.Round, "floor": math.Floor, "ceiling": math.Ceil}[call.Name]
		return map1(c.as(call.Args[0], TypeDouble).(fn[float64]), f)
	}
	f := map[string]func(int64) int64{"round": decRound, "floor": decFloor, "ceiling": decCeil}[call.Name]
	return map1(c.as(call.Args[0], TypeDecimal).(fn[int64]), f)
}

func buildNow(c *compiler, _ *Call) any {
	now := c.now
	return fn[time.Time](func(any, []any) (time.Time, bool) { return now, true })
}

// Case-insensitive search for a lower-case needle, for the folded form of
// contains/startswith/endswith over tolower(x).

func isLower(s string) bool { return strings.ToLower(s) == s }

func containsFold(s, lower string) bool {
	if isASCII(s) && isASCII(lower) {
		n := len(lower)
		for i := 0; i+n <= len(s); i++ {
			if equalLowerASCII(s[i:i+n], lower) {
				return true
			}
		}
		return false
	}
	return strings.Contains(strings.ToLower(s), lower)
}

func hasPrefixFold(s, lower string) bool {
	if isASCII(s) && isASCII(lower) {
		return len(s) >= len(lower) && equalLowerASCII(s[:len(lower)], lower)
	}
	return strings.HasPrefix(strings.ToLower(s), lower)
}

func hasSuffixFold(s, lower string) bool {
	if isASCII(s) && isASCII(lower) {
		return len(s) >= len(lower) && equalLowerASCII(s[len(s)-len(lower):], lower)
	}
	return strings.HasSuffix(strings.ToLower(s), lower)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// equalLowerASCII reports whether lower-casing s gives lower (both ASCII).
func equalLowerASCII(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
