package odata

import (
	"strconv"
	"sync/atomic"
)

// Limits bound the work one query string can ask for. All but MaxVisits and
// MaxStringBytes are checked while the query string is read, before what they count is built, so a hostile query
// is refused (a query error, 400) after a bounded amount of work instead of being
// evaluated. The per-route limits the specification names ($top, $skip, $expand
// depth) are in Settings.
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
	// MaxStringBytes bounds the bytes of the strings concat, tolower and toupper
	// build while a request is evaluated, summed over the whole request: nested
	// concat makes strings that grow with every level, for every entity, so their
	// cost is not in the query's size. Counted before each string is built.
	MaxStringBytes int
	// MaxGroups bounds the groups $apply's groupby makes: each holds its
	// accumulators until the last entity is read, so their number, not the
	// data's size, is what a hostile groupby (by key) would grow.
	MaxGroups int
	// MaxBatchRequests bounds the requests of one $batch, MaxBatchBytes its
	// body, and MaxBatchAnswerBytes the answers it holds: each request is
	// answered in full, in memory, before the batch's answer is sent, so
	// without it twenty whole collections would be.
	MaxBatchRequests    int
	MaxBatchBytes       int
	MaxBatchAnswerBytes int
}

// DefaultLimits are the limits a zero Limits field stands for. Every documented
// example and golden test stays far below them; ASP.NET Core OData's defaults are
// of the same order (100 nodes, 1 level of any/all).
var DefaultLimits = Limits{
	MaxQueryBytes:       8 << 10,
	MaxNodes:            200,
	MaxOrderByKeys:      8,
	MaxDepth:            64,
	MaxLambdaDepth:      2,
	MaxVisits:           250_000,
	MaxStringBytes:      16 << 20,
	MaxGroups:           10_000,
	MaxBatchRequests:    20,
	MaxBatchBytes:       64 << 10,
	MaxBatchAnswerBytes: 8 << 20,
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
		MaxQueryBytes:       pick(l.MaxQueryBytes, d.MaxQueryBytes),
		MaxNodes:            pick(l.MaxNodes, d.MaxNodes),
		MaxOrderByKeys:      pick(l.MaxOrderByKeys, d.MaxOrderByKeys),
		MaxDepth:            pick(l.MaxDepth, d.MaxDepth),
		MaxLambdaDepth:      pick(l.MaxLambdaDepth, d.MaxLambdaDepth),
		MaxVisits:           pick(l.MaxVisits, d.MaxVisits),
		MaxStringBytes:      pick(l.MaxStringBytes, d.MaxStringBytes),
		MaxGroups:           pick(l.MaxGroups, d.MaxGroups),
		MaxBatchRequests:    pick(l.MaxBatchRequests, d.MaxBatchRequests),
		MaxBatchBytes:       pick(l.MaxBatchBytes, d.MaxBatchBytes),
		MaxBatchAnswerBytes: pick(l.MaxBatchAnswerBytes, d.MaxBatchAnswerBytes),
	}
}

// budget is what one query string has used of its Limits so far. Every option of the
// query string, nested ones included, draws on the same budget.
type budget struct {
	Limits
	nodes int
}

func newBudget(l Limits) *budget { return &budget{Limits: l.orDefault()} }

// evaluation counts what one request's evaluation has used of the limits that depend
// on the data (MaxVisits, MaxStringBytes). Evaluations of one Query may run at once,
// so the counts are atomic. A nil *evaluation counts nothing.
type evaluation struct {
	visits, bytes       int64 // used so far
	maxVisits, maxBytes int64
}

func newEvaluation(l Limits) *evaluation {
	return &evaluation{maxVisits: int64(l.MaxVisits), maxBytes: int64(l.MaxStringBytes)}
}

// visit counts n more related entities. Past the bound it stops the evaluation with
// a query error: a panic, recovered where the evaluation started.
func (e *evaluation) visit(n int) {
	if e != nil && atomic.AddInt64(&e.visits, int64(n)) > e.maxVisits {
		panic(&Error{Msg: "evaluating the query reached more than " + strconv.FormatInt(e.maxVisits, 10) + " related entities"})
	}
}

// build counts a string of n bytes about to be built, and stops the evaluation as
// visit does.
func (e *evaluation) build(n int) {
	if e != nil && atomic.AddInt64(&e.bytes, int64(n)) > e.maxBytes {
		panic(&Error{Msg: "evaluating the query built more than " + strconv.FormatInt(e.maxBytes, 10) + " bytes of strings"})
	}
}
