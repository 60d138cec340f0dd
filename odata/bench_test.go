package odata

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

var benchWords = []string{"Pro", "Basic", "Ultra", "mini", "PROmax", "Lite", "Compact", "Studio"}

// benchProducts generates n products with varied names and prices.
func benchProducts(n int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = &product{
			ID:       int64(i + 1),
			Name:     fmt.Sprintf("%s Item %d %s", benchWords[i%len(benchWords)], i, benchWords[(i/7)%len(benchWords)]),
			Price:    int64(i%2000) * 7919 % 12000000,
			Category: benchWords[i%3],
			Created:  time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute),
			Active:   i%3 != 0,
		}
	}
	return items
}

const benchFilter = "price gt 500 and contains(tolower(name),'pro')"

// handWritten is the Go loop the compiled filter is measured against.
func handWritten(items []any) int {
	n := 0
	for _, x := range items {
		p := x.(*product)
		if p.Price > 500*decimalScale && strings.Contains(strings.ToLower(p.Name), "pro") {
			n++
		}
	}
	return n
}

func compiledCount(f *Filter, items []any) int {
	n := 0
	for _, x := range items {
		if f.Match(x) {
			n++
		}
	}
	return n
}

func TestBenchFilterAgrees(t *testing.T) {
	_, products, _ := newTestModel()
	items := benchProducts(10000)
	f, err := parseFilter(benchFilter, products.Type)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := compiledCount(f, items), handWritten(items); got != want || want == 0 {
		t.Fatalf("compiled filter matched %d, hand-written loop %d", got, want)
	}
}

// BenchmarkFilter compares the compiled $filter with the hand-written loop
// over 100,000 products; the ratio of the two ns/op is the overhead.
func BenchmarkFilter(b *testing.B) {
	_, products, _ := newTestModel()
	items := benchProducts(100000)
	f, err := parseFilter(benchFilter, products.Type)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("compiled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			compiledCount(f, items)
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			handWritten(items)
		}
	})
	// The same loop with the allocation-free case folding the compiler
	// uses, isolating the cost of the closures themselves.
	b.Run("handwritten_fold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for _, x := range items {
				p := x.(*product)
				if p.Price > 500*decimalScale && containsFold(p.Name, "pro") {
					n++
				}
			}
		}
	})
}

// BenchmarkParse measures parsing, checking and compiling a typical query.
func BenchmarkParse(b *testing.B) {
	_, products, _ := newTestModel()
	raw := "$filter=price%20gt%20500%20and%20contains(tolower(name),'pro')%20and%20orders/any(o:o/quantity%20gt%205)" +
		"&$orderby=price%20desc,name&$select=id,name,price&$expand=orders($select=id;$top=5)&$top=20&$count=true"
	s := Settings{Allowed: optAll, MaxTop: 100, MaxExpansionDepth: 2}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseQuery(raw, products.Type, s); err != nil {
			b.Fatal(err)
		}
	}
}

// sizeProducts generates n products the way bench/'s generator does (an
// adjective, a noun, a model number; prices from 1.00 to 2000.99), except that
// one name in four ends in "Pro", so that benchFilter matches about a fifth of
// them, as the target data does. The same n always gives the same products.
func sizeProducts(n int) []any {
	adjectives := []string{"Compact", "Deluxe", "Classic", "Smart", "Portable", "Quiet", "Rugged", "Slim", "Solar", "Wireless"}
	nouns := []string{"Laptop", "Kettle", "Lamp", "Chair", "Desk", "Camera", "Speaker", "Blender", "Drill", "Backpack"}
	r := rand.New(rand.NewPCG(16, 16))
	items := make([]any, n)
	for i := range items {
		name := adjectives[r.IntN(len(adjectives))] + " " + nouns[r.IntN(len(nouns))]
		if r.IntN(4) == 0 {
			name += " Pro"
		}
		items[i] = &product{
			ID:       int64(i + 1),
			Name:     name + " " + strconv.Itoa(100+r.IntN(900)),
			Price:    int64(100+r.IntN(200_000)) * decimalScale / 100,
			Category: benchWords[r.IntN(3)],
			Created:  time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour),
			Active:   r.IntN(10) != 0,
		}
	}
	return items
}

// BenchmarkQueryAtSize serves the queries of the OData targets over 100,000 products:
// top-10 pages, which should cost a small part of the whole collection, and a
// full-collection $orderby, which should cost what a stable sort does. Each
// operation is what a collection request does: parse the query, evaluate it
// and encode the page (the full-collection pages are not encoded: that would
// measure the encoder).
func BenchmarkQueryAtSize(b *testing.B) {
	_, products, _ := newTestModel()
	items := sizeProducts(100_000)
	s := Settings{Allowed: optAll, MaxTop: 100}
	for _, bm := range []struct {
		name, query string
		encode      bool
	}{
		{"orderby_top10", "$orderby=price desc&$top=10", true},
		{"filter_top10", "$filter=" + benchFilter + "&$top=10", true},
		{"filter_count_top10", "$filter=" + benchFilter + "&$top=10&$count=true", true},
		{"orderby_skip_top10", "$orderby=name,price desc&$skip=90&$top=10", true},
		{"orderby_all", "$orderby=price desc", false},
		{"orderby_name_all", "$orderby=name", false},
	} {
		raw := strings.ReplaceAll(bm.query, " ", "%20")
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				q, err := parseQuery(raw, products.Type, s)
				if err != nil {
					b.Fatal(err)
				}
				page, n, err := q.Evaluate(items, nil, false)
				if err != nil {
					b.Fatal(err)
				}
				if bm.encode {
					if _, err := q.AppendCollection(nil, "c", page, n, q.count); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	// The floor of orderby_top10: a loop that only reads every price through
	// the model's getter and keeps the largest.
	b.Run("read_prices", func(b *testing.B) {
		price := products.Type.Property("price").Decimal
		for b.Loop() {
			var top int64
			for _, x := range items {
				top = max(top, price(x))
			}
		}
	})
}
