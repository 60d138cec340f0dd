package odata

import (
	"strconv"
	"sync/atomic"
)

// Limits bound the work one query string can ask for. Each is checked while the
// query string is read, before what it counts is built, so a hostile query is refused
// after a bounded amount of work (a query error, 400) instead of being evaluated. The
// per-route limits the specification names ($top, $skip, $expand depth) are in Settings.
//
// A zero field means the value in DefaultLimits, never "no limit".
type Limits struct {
	// MaxQueryBytes bounds the raw, still percent-encoded, query string.
	MaxQueryBytes int
	// MaxNodes bounds the expression nodes (names, literals, operators, function calls,
	// lambdas, items of an in list) of the whole query string: $filter and every $orderby
	// key, those nested in $expand included.
	MaxNodes int
	// MaxOrderByKeys bounds the keys of one $orderby, at the top level or in $expand.
	MaxOrderByKeys int
	// MaxDepth bounds nesting: parentheses, not and -, function arguments, lambdas and
	// $expand levels. The parser recurses on these, so this is what keeps hostile input
	// from exhausting the stack.
	MaxDepth int
	// MaxLambdaDepth bounds how deeply any/all nest. Each level multiplies evaluation by
	// the size of a collection, so the cost of a nested lambda grows as a power of it.
	MaxLambdaDepth int
	// MaxVisits bounds the related entities a request's expressions may reach while
	// they are evaluated: each member of every collection navigation fetched for
	// any, all or $count, summed over the whole request ($expand's nested options
	// included). The others bound the query's text; this one depends on the data
	// (any over a product's orders inside any over orders costs the square of the
	// orders), so it is counted during evaluation, which stops with a query error.
	MaxVisits int
}

// DefaultLimits are the limits a zero Limits field stands for. Every documented
// example and golden test stays far below them; ASP.NET Core OData's defaults are
// of the same order (100 nodes, 1 level of any/all).
var DefaultLimits = Limits{
	MaxQueryBytes:  8 << 10,
	MaxNodes:       200,
	MaxOrderByKeys: 8,
	MaxDepth:       64,
	MaxLambdaDepth: 2,
	MaxVisits:      250_000,
}

// orDefault returns l with each zero field taken from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return Limits{
		MaxQueryBytes:  pick(l.MaxQueryBytes, d.MaxQueryBytes),
		MaxNodes:       pick(l.MaxNodes, d.MaxNodes),
		MaxOrderByKeys: pick(l.MaxOrderByKeys, d.MaxOrderByKeys),
		MaxDepth:       pick(l.MaxDepth, d.MaxDepth),
		MaxLambdaDepth: pick(l.MaxLambdaDepth, d.MaxLambdaDepth),
		MaxVisits:      pick(l.MaxVisits, d.MaxVisits),
	}
}

// budget is what one query string has used of its Limits so far. Every option of the
// query string, nested ones included, draws on the same budget.
type budget struct {
	Limits
	nodes int
}

func newBudget(l Limits) *budget { return &budget{Limits: l.orDefault()} }

// visits counts the related entities one request's evaluation has reached, against
// Limits.MaxVisits. Evaluations of one Query may run at once, so the count is atomic.
// A nil *visits counts nothing.
type visits struct {
	n, max int64
}

// charge counts n more related entities, and stops the evaluation with a query error
// (a panic recovered where the evaluation started) once they are too many.
func (v *visits) charge(n int) {
	if v == nil {
		return
	}
	if atomic.AddInt64(&v.n, int64(n)) > v.max {
		panic(&Error{Msg: "evaluating the query reached more than " + strconv.FormatInt(v.max, 10) + " related entities"})
	}
}
