package odata

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
	}
}

// budget is what one query string has used of its Limits so far. Every option of the
// query string, nested ones included, draws on the same budget.
type budget struct {
	Limits
	nodes int
}

func newBudget(l Limits) *budget { return &budget{Limits: l.orDefault()} }
