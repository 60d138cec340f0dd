package odata

import (
	"strconv"
	"sync/atomic"
)

// Limits bound the work one query string, or one $batch body (the MaxBatch
// fields), can ask for. All but MaxVisits, MaxStringBytes and MaxGroups are
// checked while it is read, before what they count is built; those three depend
// on the data and are counted as it is evaluated. Either way a
// hostile query is a query error (400) after bounded work. A zero field means
// the value in DefaultLimits, never "no limit".
type Limits struct {
	MaxQueryBytes  int // the raw, percent-encoded query string
	MaxNodes       int // expression nodes of the whole query string, $expand's included
	MaxOrderByKeys int // keys of one $orderby
	// MaxDepth bounds nesting (parentheses, not and -, arguments, lambdas,
	// $expand levels): the parser recurses on it.
	MaxDepth int
	// MaxLambdaDepth bounds any/all nesting: each level multiplies evaluation by
	// the size of a collection.
	MaxLambdaDepth int
	// MaxVisits bounds the related entities fetched for any, all and $count over
	// the whole request.
	MaxVisits int
	// MaxStringBytes bounds the bytes concat, tolower and toupper build over the
	// whole request.
	MaxStringBytes int
	MaxGroups      int // groups of $apply's groupby, each held until the end
	// The requests of one $batch, its body, and the answers it holds in memory.
	MaxBatchRequests    int
	MaxBatchBytes       int
	MaxBatchAnswerBytes int
}

// DefaultLimits are the limits a zero Limits field stands for, of the order of
// ASP.NET Core OData's (100 nodes, 1 level of any/all).
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

// orDefault returns l with each zero (or negative) field taken from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *int }{
		{&l.MaxQueryBytes, &d.MaxQueryBytes}, {&l.MaxNodes, &d.MaxNodes},
		{&l.MaxOrderByKeys, &d.MaxOrderByKeys}, {&l.MaxDepth, &d.MaxDepth},
		{&l.MaxLambdaDepth, &d.MaxLambdaDepth}, {&l.MaxVisits, &d.MaxVisits},
		{&l.MaxStringBytes, &d.MaxStringBytes}, {&l.MaxGroups, &d.MaxGroups},
		{&l.MaxBatchRequests, &d.MaxBatchRequests}, {&l.MaxBatchBytes, &d.MaxBatchBytes},
		{&l.MaxBatchAnswerBytes, &d.MaxBatchAnswerBytes},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// budget is what one query string, all its options together, has used of its Limits.
type budget struct {
	Limits
	nodes int
}

func newBudget(l Limits) *budget { return &budget{Limits: l.orDefault()} }

// node counts one expression node at pos against the budget, before it is built.
func (b *budget) node(pos int) {
	b.nodes++
	if b.nodes > b.MaxNodes {
		failf(pos, "query has more than %d expression nodes", b.MaxNodes)
	}
}

// evaluation counts what one request's evaluation has used of MaxVisits and
// MaxStringBytes; atomically, as evaluations of one Query may run at once. A nil
// *evaluation counts nothing.
type evaluation struct {
	visits, bytes       int64 // used so far
	maxVisits, maxBytes int64
}

// visit counts n more related entities; past the bound it raises a query error.
func (e *evaluation) visit(n int) {
	if e != nil && atomic.AddInt64(&e.visits, int64(n)) > e.maxVisits {
		panic(&Error{Msg: "evaluating the query reached more than " + strconv.FormatInt(e.maxVisits, 10) + " related entities"})
	}
}

// build counts a string of n bytes about to be built, as visit counts.
func (e *evaluation) build(n int) {
	if e != nil && atomic.AddInt64(&e.bytes, int64(n)) > e.maxBytes {
		panic(&Error{Msg: "evaluating the query built more than " + strconv.FormatInt(e.maxBytes, 10) + " bytes of strings"})
	}
}
