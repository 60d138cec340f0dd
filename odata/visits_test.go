package odata

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// busyProducts returns n products; the first has orders orders, each of which
// points back to it, and the others have none.
func busyProducts(n, orders int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = &product{ID: int64(i + 1), Name: "p"}
	}
	first := items[0].(*product)
	for i := range orders {
		first.Orders = append(first.Orders, &order{ID: int64(i + 1), ProductID: 1, Quantity: 1, Product: first})
	}
	return items
}

// TestMaxVisits checks that evaluation counts the related entities it reaches and
// stops past Limits.MaxVisits: an any nested in an any over the same orders costs
// their square.
func TestMaxVisits(t *testing.T) {
	_, products, _ := newTestModel()
	items := busyProducts(3, 1000)
	tests := []struct {
		raw       string
		maxVisits int
		refused   bool
	}{
		{"$filter=orders/any(o: o/quantity lt 0)", 1000, false},
		{"$filter=orders/any(o: o/quantity lt 0)", 999, true},
		{"$filter=orders/$count lt 0", 1000, false},
		{"$filter=orders/$count lt 0", 999, true},
		{"$orderby=orders/$count", 999, true},
		{"$filter=orders/any(o: o/product/orders/any(p: p/quantity lt 0))", 0, true}, // 1,001,000, over the default
		{"$filter=orders/any(o: o/product/orders/any(p: p/quantity lt 0))", 1_001_000, false},
		{"$filter=orders/any(o: o/product/orders/$count lt 0)", 1_001_000, false},
		{"$filter=orders/any(o: o/product/orders/$count lt 0)", 1_000_999, true},
		{"$filter=orders/any(o: o/quantity lt 0) or orders/any(o: o/quantity lt 0)", 1999, true},
		{"$filter=orders/any(o: o/quantity lt 0) or orders/any(o: o/quantity lt 0)", 2000, false},
	}
	for _, tt := range tests {
		q, err := parseQuery(tt.raw, products.Type, Settings{Allowed: optAll, Limits: Limits{MaxVisits: tt.maxVisits}})
		if err != nil {
			t.Fatalf("%s: %v", tt.raw, err)
		}
		_, _, err = q.Apply(items, nil)
		if refused := err != nil; refused != tt.refused {
			t.Errorf("%s with MaxVisits %d: error %v, want refused %v", tt.raw, tt.maxVisits, err, tt.refused)
		}
		if e, ok := asError(err); err != nil && (!ok || !strings.Contains(e.Error(), "reached more than")) {
			t.Errorf("%s: error %v", tt.raw, err)
		}
	}
}

// TestMaxStringBytes checks that the strings concat, tolower and toupper build are
// counted before they are built, over every entity, and that the others build nothing.
func TestMaxStringBytes(t *testing.T) {
	_, products, _ := newTestModel()
	items := make([]any, 10)
	for i := range items {
		items[i] = &product{ID: int64(i + 1), Name: "abcd"} // 4 bytes
	}
	tests := []struct {
		filter   string
		maxBytes int
		refused  bool
	}{
		{"concat(name,name) eq ''", 80, false}, // 8 bytes for each of 10
		{"concat(name,name) eq ''", 79, true},
		{"concat(concat(name,name),name) eq ''", 200, false}, // 8 + 12
		{"concat(concat(name,name),name) eq ''", 199, true},
		{"tolower(name) eq '' or toupper(name) eq ''", 80, false},
		{"tolower(name) eq '' or toupper(name) eq ''", 79, true},
		{"trim(name) eq '' and substring(name,1) eq '' and length(name) eq 0 and indexof(name,'x') eq 0", 1, false},
		{"contains(tolower(name),'x')", 1, false}, // folds case while searching
	}
	for _, tt := range tests {
		q, err := parseQuery("$filter="+url.QueryEscape(tt.filter), products.Type, Settings{Allowed: optAll, Limits: Limits{MaxStringBytes: tt.maxBytes}})
		if err != nil {
			t.Fatalf("%s: %v", tt.filter, err)
		}
		_, _, err = q.Apply(items, nil)
		if refused := err != nil; refused != tt.refused {
			t.Errorf("%s with MaxStringBytes %d: error %v, want refused %v", tt.filter, tt.maxBytes, err, tt.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "built more than "+itoa(tt.maxBytes)+" bytes of strings") {
			t.Errorf("%s: error %v", tt.filter, err)
		}
	}
}

// TestMaxVisitsPerQuery checks that the count covers every evaluation of one Query,
// $expand's nested options included, as a request makes many.
func TestMaxVisitsPerQuery(t *testing.T) {
	_, products, _ := newTestModel()
	items := busyProducts(3, 100)
	q, err := parseQuery("$filter=orders/any(o: o/quantity lt 0)", products.Type, Settings{Allowed: optAll, Limits: Limits{MaxVisits: 250}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, false, true} {
		if _, _, err := q.Apply(items, nil); (err != nil) != want {
			t.Fatalf("evaluation %d: error %v, want refused %v", i+1, err, want)
		}
	}

	q, err = parseQuery("$expand=orders($filter=product/orders/any(p: p/quantity lt 0))", products.Type, Settings{Allowed: optAll, Limits: Limits{MaxVisits: 5000}})
	if err != nil {
		t.Fatal(err)
	}
	page, n, err := q.Apply(items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.AppendCollection(nil, "c", page, n, false); err == nil || !strings.Contains(err.Error(), "more than 5000 related entities") {
		t.Errorf("AppendCollection: %v", err)
	}
	if _, err := q.appendEntity(nil, "c", items[0]); err == nil {
		t.Errorf("AppendEntity: no error")
	}
}

// TestMaxVisitsHTTP checks the answers: 400 with the OData error when nothing is
// sent yet, a cut connection when a streamed collection is under way.
func TestMaxVisitsHTTP(t *testing.T) {
	_, products, _ := newTestModel()
	items := busyProducts(5000, 300)
	rt := &Route{Set: products, List: func(context.Context) []any { return items },
		Settings: Settings{Allowed: optAll, MaxExpansionDepth: 2, Limits: Limits{MaxVisits: 50_000}}}
	srv := httptest.NewServer(rt.listHandler())
	defer srv.Close()
	get := func(query string) (*http.Response, []byte, error) {
		resp, err := http.Get(srv.URL + "?" + url.PathEscape(query))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}

	resp, body, err := get("$filter=orders/any(o: o/product/orders/any(p: p/quantity lt 0))")
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":"BadRequest","message":"evaluating the query reached more than 50000 related entities`) {
		t.Errorf("$filter: %v %d %s", err, resp.StatusCode, body)
	}

	r := rt.ServeList(context.Background(), "$top=1&$expand=orders($filter=product/orders/any(p: p/quantity lt 0))", "m")
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "related entities") {
		t.Errorf("ServeList: %d %s", r.Status, r.Body)
	}

	// By id descending, the products without orders come first and fill more than a
	// flush; product 1 comes last and reaches the bound.
	resp, body, err = get("$orderby=id desc&$expand=orders($filter=product/orders/any(p: p/quantity lt 0))")
	if resp.StatusCode != http.StatusOK || err == nil || len(body) < flushSize {
		t.Errorf("streamed: %d, %d bytes, error %v; want 200 cut after a flush", resp.StatusCode, len(body), err)
	}
}
