package odata

import (
	"cmp"
	"math"
	"strings"
	"time"
)

// Compiled comparisons (with OData's null rules) and arithmetic (overflow and
// division by zero give null).

// relOp is a relational operator: which outcomes of a comparison (less,
// equal, greater) satisfy it.
type relOp [3]bool

var relOps = map[string]relOp{
	"eq": {false, true, false}, "ne": {true, false, true},
	"gt": {false, false, true}, "ge": {false, true, true},
	"lt": {true, false, false}, "le": {true, true, false},
}

// holds reports whether the comparison result c (by its sign) satisfies op.
func (op relOp) holds(c int) bool { return op[cmp.Compare(c, 0)+1] }

// flip mirrors an operator so that "k lt x" becomes "x gt k".
func (op relOp) flip() relOp { return relOp{op[2], op[1], op[0]} }

// nulls is the result of a comparison with a null operand: null eq null and
// null ne x are true, ordering comparisons with null false.
func (op relOp) nulls(bothNull bool) bool {
	if op[0] != op[2] { // lt, le, gt, ge
		return false
	}
	return op[1] == bothNull // eq: both are null; ne: one is
}

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

func compareTyped[T any](c *compiler, op relOp, x, y Expr, t Type, cmpf func(a, b T) int, get func(*Property) func(any) T) fn[bool] {
	if _, ok := x.(*Literal); ok {
		if _, ok := y.(*Literal); !ok {
			x, y, op = y, x, op.flip()
		}
	}
	if l, ok := y.(*Literal); ok {
		if k, ok := constant(l, t); ok {
			var g func(any) T
			if p, ok := x.(*Path); ok && direct(p) && edmTypes[p.Prop.Type].typ == t {
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

func (c *compiler) comparison(name string, x, y Expr, t Type) fn[bool] {
	op := relOps[name]
	if lit, _ := x.(*Literal); lit != nil && lit.cut { // to the right, where cmpCut reads it, a literal on the left too
		x, y, op = y, x, op.flip()
	}
	xt, yt := x.Type(), y.Type()
	lit, _ := y.(*Literal)
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
		// Integers compare with decimals exactly, unscaled (which could overflow).
		if xt == TypeInt {
			x, y, op = y, x, op.flip()
		}
		dx := c.compile(x).(fn[int64])
		if l, ok := y.(*Literal); ok {
			var get func(any) int64
			if p, ok := x.(*Path); ok && direct(p) {
				get = p.Prop.Decimal
			}
			return compareConst(op, dx, get, l.Int, cmpDecInt)
		}
		return compareFn(op, dx, c.compile(y).(fn[int64]), cmpDecInt)
	case t == TypeDouble && (xt == TypeDecimal || yt == TypeDecimal) && lit != nil && lit.cut:
		// The literal lies strictly between its cut value k and the next unit away
		// from zero: a decimal equal to k is nearer zero than the literal.
		nearer := cmp.Compare(0, math.Copysign(1, lit.Float))
		cmpCut := func(d, k int64) int { return cmp.Or(cmp.Compare(d, k), nearer) }
		return compareTyped(c, op, x, y, TypeDecimal, cmpCut, func(p *Property) func(any) int64 { return p.Decimal })
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
	return compareTyped(c, op, x, y, t, time.Time.Compare, func(p *Property) func(any) time.Time { return p.Time })
}

// in is compiled as a disjunction of eq comparisons.
func (c *compiler) in(e *In) any {
	if len(e.List) == 0 {
		return constFn[bool](false, true)
	}
	var f fn[bool]
	for _, item := range e.List {
		t, _ := promote(e.X.Type(), item.Type()) // each item as with eq, not at the list's widest type
		g := c.comparison("eq", e.X, item, t)
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
	"add": decAdd, "sub": decSub, "mod": decMod,
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

// map1 and map2 apply f to non-null arguments; a null argument yields null.

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
