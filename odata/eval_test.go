package odata

import (
	"cmp"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reference evaluates q the plain way: keep what passes, stable-sort all of
// it comparing keys computed afresh, count, then cut the page.
func reference(q *Query, items []any, restrict func(any) bool) (page []any, count int) {
	var kept []any
	for _, x := range items {
		if (q.filter == nil || q.filter.Match(x)) && (restrict == nil || restrict(x)) {
			kept = append(kept, x)
		}
	}
	slices.SortStableFunc(kept, func(a, b any) int {
		for _, k := range q.order {
			var c int
			switch f := k.f.(type) {
			case fn[bool]:
				c = refCompare(f, a, b, cmpBool)
			case fn[int64]:
				c = refCompare(f, a, b, cmp.Compare[int64])
			case fn[float64]:
				c = refCompare(f, a, b, compareFloat)
			case fn[string]:
				c = refCompare(f, a, b, strings.Compare)
			case fn[time.Time]:
				c = refCompare(f, a, b, time.Time.Compare)
			}
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	count = len(kept)
	kept = kept[min(int64(len(kept)), q.skip):] // 0 without $skip
	if q.hasTop && q.top < int64(len(kept)) {
		kept = kept[:q.top]
	}
	return kept, count
}

// refCompare orders nulls first.
func refCompare[T any](f fn[T], a, b any, cmpf func(T, T) int) int {
	x, xok := f(a, nil)
	y, yok := f(b, nil)
	if !xok || !yok {
		return cmpBool(xok, yok)
	}
	return cmpf(x, y)
}

// randomCatalog returns products and orders drawn from few values, so that
// keys tie often; some orders have no product, so product/price is null.
func randomCatalog(r *rand.Rand) (products, orders []any) {
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range r.IntN(60) {
		products = append(products, &product{
			ID: int64(i + 1), Name: []string{"", "a", "B", "b", "Pro x"}[r.IntN(5)],
			Price: int64(r.IntN(4)) * decimalScale, Category: []string{"x", "y"}[r.IntN(2)],
			Created: day.AddDate(0, 0, r.IntN(3)), Active: r.IntN(2) == 0,
		})
	}
	for i := range r.IntN(60) {
		o := &order{ID: int64(i + 1), Quantity: int64(r.IntN(3)), CustomerName: []string{"a", "b"}[r.IntN(2)]}
		if len(products) > 0 && r.IntN(3) > 0 {
			o.Product = products[r.IntN(len(products))].(*product)
		}
		orders = append(orders, o)
	}
	return products, orders
}

// randomQuery returns a query string of random $filter, $orderby, $skip, $top
// and $count, from the keys and filters given.
func randomQuery(r *rand.Rand, keys, filters []string) string {
	var opts []string
	if r.IntN(2) == 0 {
		opts = append(opts, "$filter="+url.QueryEscape(filters[r.IntN(len(filters))]))
	}
	if r.IntN(5) > 0 {
		var order []string
		for range 1 + r.IntN(3) {
			k := keys[r.IntN(len(keys))]
			if r.IntN(2) == 0 {
				k += " desc"
			}
			order = append(order, k)
		}
		opts = append(opts, "$orderby="+url.QueryEscape(strings.Join(order, ",")))
	}
	if r.IntN(2) == 0 {
		opts = append(opts, "$skip="+strconv.Itoa(r.IntN(70)))
	}
	if r.IntN(4) > 0 {
		opts = append(opts, "$top="+strconv.Itoa(r.IntN(70)))
	}
	if r.IntN(3) == 0 {
		opts = append(opts, "$count=true")
	}
	return strings.Join(opts, "&")
}

// TestEvaluateAgreesWithFullSort checks, on random data full of ties and
// nulls, that every way of evaluating a query (a bounded heap for $orderby
// with $top, stopping at the page without $orderby and $count, counting
// without keeping) gives what filtering everything and stable-sorting it does.
func TestEvaluateAgreesWithFullSort(t *testing.T) {
	_, ps, os := newTestModel()
	sets := []struct {
		set           *EntitySet
		keys, filters []string
	}{
		{ps, []string{"price", "name", "tolower(name)", "category", "isActive", "createdDate", "id"},
			[]string{"price gt 1", "contains(tolower(name),'b')", "isActive", "price le 2 and category eq 'x'"}},
		{os, []string{"product/price", "product/name", "quantity", "customerName", "id"},
			[]string{"quantity gt 0", "product/price ge 2", "product eq null"}},
	}
	active := func(x any) bool { p, ok := x.(*product); return !ok || p.Active }
	r := rand.New(rand.NewPCG(1, 16))
	for i := range 4000 {
		products, orders := randomCatalog(r)
		s := sets[i%2]
		items := [][]any{products, orders}[i%2]
		raw := randomQuery(r, s.keys, s.filters)
		var restrict func(any) bool
		if r.IntN(4) == 0 {
			restrict = active
		}
		q, err := parseQuery(raw, s.set.Type, Settings{Allowed: optAll})
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		wantPage, wantCount := reference(q, items, restrict)
		page, count, err := q.Apply(items, restrict)
		if err != nil || count != wantCount || !slices.Equal(page, wantPage) {
			t.Fatalf("%s over %d: Apply gives %d of %d (%v), want %d of %d\n got %v\nwant %v",
				raw, len(items), len(page), count, err, len(wantPage), wantCount, ids(page), ids(wantPage))
		}
		page, count, err = q.Evaluate(items, restrict, false)
		if !q.count {
			wantCount = -1
		}
		if err != nil || count != wantCount || !slices.Equal(page, wantPage) {
			t.Fatalf("%s over %d: Evaluate gives %d of %d (%v), want %d of %d", raw, len(items), len(page), count, err, len(wantPage), wantCount)
		}
		n, err := q.matches(items, restrict)
		if _, all := reference(q, items, restrict); err != nil || n != all {
			t.Fatalf("%s: Matches gives %d (%v), want %d", raw, n, err, all)
		}
	}
}

// ids lists the keys of products and orders, for failure messages.
func ids(items []any) []int64 {
	var out []int64
	for _, x := range items {
		switch x := x.(type) {
		case *product:
			out = append(out, x.ID)
		case *order:
			out = append(out, x.ID)
		}
	}
	return out
}

// TestEvaluateStopsAtPage checks that a page of $top without $orderby or a
// wanted count looks at no entity past its last, and that a count looks at
// them all.
func TestEvaluateStopsAtPage(t *testing.T) {
	_, ps, _ := newTestModel()
	items := benchProducts(1000)
	for _, tt := range []struct {
		raw       string
		withCount bool
		looked    int
	}{
		{"$skip=3&$top=5", false, 8},
		{"$top=0", false, 0},
		{"$filter=id gt 10&$top=5", false, 5}, // restrict runs on what passes $filter
		{"$top=5&$count=true", false, 1000},
		{"$top=5", true, 1000},
		{"$orderby=price&$top=5", false, 1000},
	} {
		q, err := parseQuery(strings.ReplaceAll(tt.raw, " ", "%20"), ps.Type, Settings{Allowed: optAll})
		if err != nil {
			t.Fatal(err)
		}
		looked := 0
		page, _, err := q.Evaluate(items, func(any) bool { looked++; return true }, tt.withCount)
		if err != nil || looked != tt.looked || len(page) != min(int(q.top), 1000) {
			t.Errorf("%s (count %v): %d entities looked at, page of %d (%v); want %d looked at", tt.raw, tt.withCount, looked, len(page), err, tt.looked)
		}
	}
}

// TestEvaluateHoldsOnlyThePage checks that what an evaluation allocates does
// not grow with the entities it looks at when the page is bounded: a count, a
// top-k and a filtered page keep no list of what passes.
func TestEvaluateHoldsOnlyThePage(t *testing.T) {
	_, ps, _ := newTestModel()
	small, large := benchProducts(100), benchProducts(10_000)
	for _, raw := range []string{
		"$filter=price gt 0&$top=2&$count=true",
		"$filter=price gt 0&$orderby=name desc&$skip=1&$top=2",
		"$orderby=price&$top=2&$count=true",
		"$filter=price gt 0&$top=0&$count=true",
	} {
		q, err := parseQuery(strings.ReplaceAll(raw, " ", "%20"), ps.Type, Settings{Allowed: optAll})
		if err != nil {
			t.Fatal(err)
		}
		allocs := func(items []any) float64 {
			return testing.AllocsPerRun(5, func() {
				if _, _, err := q.Evaluate(items, nil, true); err != nil {
					t.Fatal(err)
				}
			})
		}
		if a, b := allocs(small), allocs(large); a != b {
			t.Errorf("%s: %v allocations over 100 products, %v over 10,000", raw, a, b)
		}
	}
}

// TestEvaluateCountsVisits checks that the bounded ways of evaluating still
// count the related entities they reach against Limits.MaxVisits: the heap
// computes every candidate's keys, and a page stops only where it ends.
func TestEvaluateCountsVisits(t *testing.T) {
	_, ps, _ := newTestModel()
	items := busyProducts(3, 1000) // product 1 has the 1,000 orders
	for _, tt := range []struct {
		raw       string
		maxVisits int
		refused   bool
	}{
		{"$orderby=orders/$count desc&$top=1", 1000, false},
		{"$orderby=orders/$count desc&$top=1", 999, true},
		{"$filter=orders/$count gt 0 or true&$top=1", 999, true}, // product 1 comes first
		{"$filter=id gt 1 and orders/$count eq 0&$top=1", 1, false},
	} {
		q, err := parseQuery(strings.ReplaceAll(tt.raw, " ", "%20"), ps.Type, Settings{Allowed: optAll, Limits: Limits{MaxVisits: tt.maxVisits}})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = q.Evaluate(items, nil, false)
		if refused := err != nil; refused != tt.refused {
			t.Errorf("%s with MaxVisits %d: error %v, want refused %v", tt.raw, tt.maxVisits, err, tt.refused)
		}
	}
}
