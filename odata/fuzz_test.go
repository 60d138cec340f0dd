package odata

import (
	"strings"
	"testing"
)

// FuzzParseQuery feeds arbitrary query strings through parsing, checking,
// compilation and evaluation. It must never panic, every error must be an
// *Error whose message ends with its position, and the position must lie
// within the option value.
func FuzzParseQuery(f *testing.F) {
	seeds := []string{
		"$filter=price gt 500 and contains(tolower(name),'pro')",
		"$filter=orders/any(o: o/quantity gt 5 and o/product/orders/all(p: p/id ne o/id))",
		"$filter=createdDate ge 2024-06-01T00:00:00.5%2B02:00 or year(createdDate) eq 2023",
		"$filter=name in ('a','b''c') and not isActive or price mod 2 eq 0.5",
		"$filter=substring(name,1,2) eq 'x' and indexof(concat(name,category),'x') ge -1",
		"$filter=round(price div 3) eq floor(1.5e2) and ceiling(price) ne null",
		"$orderby=price desc,name,length(category) asc&$top=5&$skip=1&$count=true",
		"$select=id,name&$expand=orders($filter=quantity gt 2;$orderby=orderDate desc;$top=5;$select=id;$count=true)",
		"$expand=orders($expand=product($select=name))",
		"$filter=((((id eq 1))))&$select=*",
		"$filter=-(-price) lt 0 and now() gt createdDate",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	_, products, _ := newTestModel()
	items, _ := testData()
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw, products.Type, Settings{Allowed: OptAll, MaxTop: 100, MaxExpansionDepth: 3})
		if err != nil {
			e, ok := AsError(err)
			if !ok {
				t.Fatalf("%q: error %T %v is not *Error", raw, err, err)
			}
			if !strings.Contains(e.Error(), " at position ") || e.Pos < 0 || e.Pos > len(raw) {
				t.Fatalf("%q: bad error %q (pos %d)", raw, e.Error(), e.Pos)
			}
			return
		}
		page, n := q.Apply(items, nil)
		if n > len(items) || len(page) > n {
			t.Fatalf("%q: page %d of %d", raw, len(page), n)
		}
		q.AppendCollection(nil, "$metadata#Products", page, n, true)
	})
}

// FuzzParseExpr fuzzes the expression parser alone, checking that
// positions stay inside the input.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{"a eq 1", "x/any(y: y/z gt 1)", "f('it''s', 1.5e3, 2024-01-01T00:00Z)", "not (a) or -b add c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := ParseExpr(s)
		if err != nil {
			e, ok := AsError(err)
			if !ok || e.Pos < 0 || e.Pos > len(s) {
				t.Fatalf("%q: bad error %v", s, err)
			}
		}
	})
}
