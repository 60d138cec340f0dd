package odata

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strings"
	"time"
)

// Evaluation does only as much as the answer needs: a page of $top without
// $orderby stops at its last entity unless the count is wanted; $orderby with
// $top keeps the best $skip+$top entities in a bounded heap; a count never holds
// the entities it counts.

// Evaluate runs the query over items, which it only reads: $filter, restrict (if
// not nil), $orderby, count, $skip, $top. It returns the page and, when withCount
// or $count=true, the number of entities before $skip and $top (else -1). The
// error is an *Error: the evaluation went past Limits.MaxVisits or MaxStringBytes.
func (q *Query) Evaluate(items []any, restrict func(any) bool, withCount bool) (page []any, count int, err error) {
	counted := withCount || q.count
	err = run(func() { page, count = q.evaluate(items, restrict, counted) })
	if !counted {
		count = -1
	}
	return page, count, err
}

// matches returns the number of entities of items that pass $filter and
// restrict (if not nil), as /$count answers; the error is Evaluate's.
func (q *Query) matches(items []any, restrict func(any) bool) (count int, err error) {
	err = run(func() {
		pass := q.matcher(restrict)
		if pass == nil {
			count = len(items)
			return
		}
		for _, x := range items {
			if pass(x) {
				count++
			}
		}
	})
	return count, err
}

// evaluate is Evaluate, raising its error; unless counted, the count it returns
// may stop at the end of the page.
func (q *Query) evaluate(items []any, restrict func(any) bool, counted bool) (page []any, count int) {
	start, end := q.window()
	pass := q.matcher(restrict)
	if q.agg != nil {
		rows := q.agg.rows(items, pass)
		n := len(rows)
		return rows[min(start, n):min(end, n)], n
	}
	if len(q.order) > 0 { // equal keys keep their order in items
		var best []any
		if end < len(items) {
			best, count = topK(items, pass, q.order, end)
		} else {
			best, count = sortAll(items, pass, q.order)
		}
		return best[min(start, len(best)):], count
	}
	if pass == nil {
		// The page's capacity ends with it: the caller's list may be shared.
		n := len(items)
		return items[min(start, n):min(end, n):min(end, n)], n
	}
	for _, x := range items {
		if count >= end && !counted {
			break
		}
		if !pass(x) {
			continue
		}
		if count >= start && count < end {
			page = append(page, x)
		}
		count++
	}
	return page, count
}

// window returns the positions, among the entities that pass, of the first and
// one past the last entity of the page (math.MaxInt without $top).
func (q *Query) window() (start, end int) {
	start = int(min(q.skip, math.MaxInt))
	end = math.MaxInt
	if q.hasTop && q.top < int64(math.MaxInt-start) {
		end = start + int(q.top)
	}
	return start, end
}

// matcher returns the test an entity must pass, or nil when every entity passes.
// It is for one evaluation, which owns its lambda variables.
func (q *Query) matcher(restrict func(any) bool) func(any) bool {
	filters := q.applied
	if q.filter != nil {
		filters = append(filters[:len(filters):len(filters)], q.filter)
	}
	if len(filters) == 0 && q.search == nil {
		return restrict
	}
	vars := make([][]any, len(filters))
	for i, f := range filters {
		if f.nvars > 0 {
			vars[i] = make([]any, f.nvars)
		}
	}
	return func(x any) bool {
		for i, f := range filters {
			if b, ok := f.f(x, vars[i]); !b || !ok {
				return false
			}
		}
		if q.search != nil && !q.search(x) {
			return false
		}
		return restrict == nil || restrict(x)
	}
}

// sortAll returns the entities of items that pass, sorted, and their number.
func sortAll(items []any, pass func(any) bool, keys []orderKey) ([]any, int) {
	if pass != nil {
		var kept []any // most filters keep few: grown as needed, not sized for many
		for _, x := range items {
			if pass(x) {
				kept = append(kept, x)
			}
		}
		items = kept
	}
	r := newRanking(keys, len(items)) // slot i holds items[i]
	for i, x := range items {
		r.load(i, x)
	}
	slots := make([]int, len(items))
	for i := range slots {
		slots[i] = i
	}
	// The position breaks ties, so an unstable sort gives the stable order.
	slices.SortFunc(slots, r.compare)
	out := make([]any, len(items))
	for i, s := range slots {
		out[i] = items[s]
	}
	return out, len(items)
}

// topK returns the first k of the entities of items that pass, sorted, and how
// many pass: a max-heap holds the best k so far, its worst at the root, which
// each later entity has only to beat.
func topK(items []any, pass func(any) bool, keys []orderKey, k int) ([]any, int) {
	r := newRanking(keys, k+1)
	r.pos = make([]int, k+1)
	held := make([]any, k+1) // the entity in each slot
	h := &bestK{r: r, slots: make([]int, 0, k)}
	spare := k // the slot a candidate is loaded into before it is compared
	count := 0
	for i, x := range items {
		if pass != nil && !pass(x) {
			continue
		}
		count++
		switch {
		case k == 0:
		case len(h.slots) < k:
			s := len(h.slots)
			r.load(s, x)
			held[s], r.pos[s] = x, i
			heap.Push(h, s)
		default:
			r.load(spare, x)
			r.pos[spare] = i
			if r.compare(spare, h.slots[0]) < 0 {
				held[spare] = x
				h.slots[0], spare = spare, h.slots[0]
				heap.Fix(h, 0)
			}
		}
	}
	slices.SortFunc(h.slots, r.compare)
	out := make([]any, len(h.slots))
	for i, s := range h.slots {
		out[i] = held[s]
	}
	return out, count
}

// bestK is a container/heap of slots of a ranking, the worst at the root.
type bestK struct {
	r     *ranking
	slots []int
}

func (h *bestK) Len() int           { return len(h.slots) }
func (h *bestK) Less(i, j int) bool { return h.r.compare(h.slots[i], h.slots[j]) > 0 }
func (h *bestK) Swap(i, j int)      { h.slots[i], h.slots[j] = h.slots[j], h.slots[i] }
func (h *bestK) Push(x any)         { h.slots = append(h.slots, x.(int)) }
func (h *bestK) Pop() any {
	s := h.slots[len(h.slots)-1]
	h.slots = h.slots[:len(h.slots)-1]
	return s
}

// ranking holds, in numbered slots, the values of the $orderby keys of
// entities, computed once per entity, and orders the slots by them.
type ranking struct {
	keys []sortKey
	pos  []int // each slot's entity's position in items, which breaks ties; nil: the slot's number
}

func newRanking(order []orderKey, slots int) *ranking {
	r := &ranking{keys: make([]sortKey, len(order))}
	for i, o := range order {
		switch f := o.f.(type) {
		case fn[bool]:
			r.keys[i] = newKey(f, slots, cmpBool, o.desc)
		case fn[int64]:
			r.keys[i] = newKey(f, slots, cmp.Compare[int64], o.desc)
		case fn[float64]:
			r.keys[i] = newKey(f, slots, compareFloat, o.desc)
		case fn[string]:
			r.keys[i] = newKey(f, slots, strings.Compare, o.desc)
		case fn[time.Time]:
			r.keys[i] = newKey(f, slots, time.Time.Compare, o.desc)
		}
	}
	return r
}

func (r *ranking) load(s int, x any) {
	for _, k := range r.keys {
		k.load(s, x)
	}
}

// compare orders slots by the keys, then by position.
func (r *ranking) compare(a, b int) int {
	for _, k := range r.keys {
		if c := k.compare(a, b); c != 0 {
			return c
		}
	}
	if r.pos == nil {
		return cmp.Compare(a, b)
	}
	return cmp.Compare(r.pos[a], r.pos[b])
}

// sortKey holds the values of one $orderby key, by slot.
type sortKey interface {
	load(s int, x any)
	compare(a, b int) int
}

type typedKey[T any] struct {
	f    fn[T]
	vals []T
	ok   []bool
	cmpf func(a, b T) int
	desc bool
}

func newKey[T any](f fn[T], slots int, cmpf func(a, b T) int, desc bool) sortKey {
	return &typedKey[T]{f: f, vals: make([]T, slots), ok: make([]bool, slots), cmpf: cmpf, desc: desc}
}

func (k *typedKey[T]) load(s int, x any) { k.vals[s], k.ok[s] = k.f(x, nil) }

// compare orders nulls first, as OData does for ascending order.
func (k *typedKey[T]) compare(a, b int) int {
	c := cmpBool(k.ok[a], k.ok[b])
	if k.ok[a] && k.ok[b] {
		c = k.cmpf(k.vals[a], k.vals[b])
	}
	if k.desc {
		return -c
	}
	return c
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
