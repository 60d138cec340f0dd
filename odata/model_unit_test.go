package odata

import (
	"encoding/json"
	"encoding/xml"
	"math/big"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestDecimal(t *testing.T) {
	parse := []struct {
		in      string
		want    int64
		cut, ok bool
	}{
		{"19.99", 199900, false, true}, {"5", 50000, false, true}, {"0.5", 5000, false, true}, {"-0.0001", -1, false, true},
		{"+42", 420000, false, true}, {"1234.5678", 12345678, false, true}, {"1e3", 0, false, false},
		{"1.23456", 12345, true, true}, {"-1.23450000", -12345, false, true}, {"-0.00000000001", 0, true, true},
		{"922337203685478", 0, false, false}, {"922337203685477", 9223372036854770000, false, true},
	}
	for _, tt := range parse {
		got, cut, ok := parseDecimal(tt.in)
		if got != tt.want || cut != tt.cut || ok != tt.ok {
			t.Errorf("parseDecimal(%q) = %d, %v, %v; want %d, %v, %v", tt.in, got, cut, ok, tt.want, tt.cut, tt.ok)
		}
	}
	format := map[int64]string{199900: "19.99", 9999900: "999.99", 50000: "5", 5000: "0.5", 0: "0",
		-5000: "-0.5", 1: "0.0001", 12345678: "1234.5678", -9223372036854775808: "-922337203685477.5808"}
	for in, want := range format {
		if got := formatDecimal(in); got != want {
			t.Errorf("formatDecimal(%d) = %q, want %q", in, got, want)
		}
	}
	ops := []struct {
		name string
		f    func(a, b int64) (int64, bool)
		a, b int64
		want int64
		ok   bool
	}{
		{"mul", decMul, 199900, 20000, 399800, true}, // 19.99*2
		{"mul", decMul, 1, 1, 0, true},               // 0.0001*0.0001 rounds to 0
		{"mul", decMul, 5000, 1, 1, true},            // 0.5*0.0001 = 0.00005 rounds half away to 0.0001
		{"mul", decMul, -5000, 1, -1, true},          // sign symmetric
		{"div", decDiv, 10000, 30000, 3333, true},    // 1/3
		{"div", decDiv, 20000, 30000, 6667, true},    // 2/3
		{"div", decDiv, 10000, 0, 0, false},          // by zero: null
		{"mod", decMod, 199900, 10000, 9900, true},   // 19.99 mod 1
		{"mod", decMod, -199900, 10000, -9900, true}, // sign of dividend
		{"add", decAdd, 1 << 62, 1 << 62, 0, false},  // overflow: null
		{"sub", decSub, -(1 << 62), 1 << 62, -1 << 63, true},
	}
	for _, tt := range ops {
		got, ok := tt.f(tt.a, tt.b)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("%s(%d,%d) = %d,%v; want %d,%v", tt.name, tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		d, i int64
		want int
	}{{50000, 5, 0}, {50001, 5, 1}, {49999, 5, -1}, {-5000, 0, -1}, {-5000, -1, 1}, {9223372036854775807, 922337203685477, 1}} {
		if got := cmpDecInt(tt.d, tt.i); got != tt.want {
			t.Errorf("cmpDecInt(%d,%d) = %d, want %d", tt.d, tt.i, got, tt.want)
		}
	}
}

func TestMetadataWellFormed(t *testing.T) {
	rec := httptest.NewRecorder()
	testMux().ServeHTTP(rec, httptest.NewRequest("GET", "/api/$metadata", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/xml") {
		t.Errorf("GET /api/$metadata: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	doc := rec.Body.Bytes()
	type edmxDoc struct {
		XMLName xml.Name `xml:"Edmx"`
		Version string   `xml:"Version,attr"`
		Schema  struct {
			Namespace string `xml:"Namespace,attr"`
			Types     []struct {
				Name string `xml:"Name,attr"`
				Key  struct {
					Ref struct {
						Name string `xml:"Name,attr"`
					} `xml:"PropertyRef"`
				} `xml:"Key"`
				Props []struct {
					Name     string `xml:"Name,attr"`
					Type     string `xml:"Type,attr"`
					Nullable string `xml:"Nullable,attr"`
				} `xml:"Property"`
				Navs []struct {
					Name    string `xml:"Name,attr"`
					Type    string `xml:"Type,attr"`
					Partner string `xml:"Partner,attr"`
				} `xml:"NavigationProperty"`
			} `xml:"EntityType"`
			Container struct {
				Sets []struct {
					Name       string `xml:"Name,attr"`
					EntityType string `xml:"EntityType,attr"`
					Bindings   []struct {
						Path   string `xml:"Path,attr"`
						Target string `xml:"Target,attr"`
					} `xml:"NavigationPropertyBinding"`
				} `xml:"EntitySet"`
			} `xml:"EntityContainer"`
		} `xml:"DataServices>Schema"`
	}
	var edmx edmxDoc
	if err := xml.Unmarshal(doc, &edmx); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, doc)
	}
	s := edmx.Schema
	if edmx.Version != "4.0" || s.Namespace != "Quartet" || len(s.Types) != 2 || len(s.Container.Sets) != 2 {
		t.Fatalf("unexpected document:\n%s", doc)
	}
	p, o := s.Types[0], s.Types[1]
	if p.Name != "Product" || p.Key.Ref.Name != "id" || len(p.Props) != 6 || p.Props[2].Type != "Edm.Decimal" ||
		p.Props[4].Type != "Edm.DateTimeOffset" || p.Props[0].Nullable != "false" {
		t.Errorf("Product: %+v", p)
	}
	if len(p.Navs) != 1 || p.Navs[0].Type != "Collection(Quartet.Order)" || p.Navs[0].Partner != "product" {
		t.Errorf("Product navigation: %+v", p.Navs)
	}
	if o.Name != "Order" || len(o.Navs) != 1 || o.Navs[0].Type != "Quartet.Product" || o.Navs[0].Partner != "orders" {
		t.Errorf("Order: %+v", o)
	}
	set := s.Container.Sets[0]
	if set.Name != "Products" || set.EntityType != "Quartet.Product" || len(set.Bindings) != 1 ||
		set.Bindings[0].Path != "orders" || set.Bindings[0].Target != "Orders" {
		t.Errorf("Products set: %+v", set)
	}
}

func TestNewModelErrors(t *testing.T) {
	good := func() *EntityType {
		return &EntityType{Name: "T", Key: "id", Properties: []*Property{
			{Name: "id", Type: EdmInt64, Int: func(any) int64 { return 0 }}}}
	}
	tests := []struct {
		name string
		mod  func(*EntityType)
		want string
	}{
		{"missing getter", func(t *EntityType) { t.Properties = append(t.Properties, &Property{Name: "x", Type: EdmString}) }, "missing getter"},
		{"duplicate", func(t *EntityType) {
			t.Properties = append(t.Properties, &Property{Name: "ID", Type: EdmInt32, Int: func(any) int64 { return 0 }})
		}, "duplicate property"},
		{"bad key", func(t *EntityType) { t.Key = "nope" }, "key"},
		{"nav without target", func(t *EntityType) { t.Navigation = []*NavProperty{{Name: "n"}} }, "navigation"},
		{"bad partner", func(t *EntityType) {
			t.Navigation = []*NavProperty{{Name: "n", Target: t, Collection: true, Partner: "zz", Many: func(any) []any { return nil }}}
		}, "partner"},
	}
	for _, tt := range tests {
		typ := good()
		tt.mod(typ)
		if _, err := NewModel("N", &EntitySet{Name: "Ts", Type: typ}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestErrorBody(t *testing.T) {
	err := &Error{Option: "$filter", Pos: 7, Msg: `bad "quote" \ here`}
	var v struct {
		Error struct{ Code, Message string }
	}
	if e := json.Unmarshal(badRequest(err).Body, &v); e != nil {
		t.Fatal(e)
	}
	if v.Error.Code != "BadRequest" || v.Error.Message != `$filter: bad "quote" \ here at position 7` {
		t.Errorf("got %+v", v)
	}
}

func TestParseKey(t *testing.T) {
	_, products, _ := newTestModel()
	tests := []struct {
		seg string
		key int64
		ok  bool
		err bool
	}{
		{"products(5)", 5, true, false},
		{"Products(ID=12)", 12, true, false},
		{"products", 0, false, false},
		{"products(x)", 0, false, true},
		{"products(5", 0, false, true},
		{"products(name=5)", 0, false, true},
		{"products( 5)", 0, false, true},
	}
	for _, tt := range tests {
		key, ok, err := parseKey(tt.seg, products.Type)
		if key != tt.key || ok != tt.ok || (err != nil) != tt.err {
			t.Errorf("parseKey(%q) = %d, %v, %v", tt.seg, key, ok, err)
		}
	}
}

// TestOutputIsJSON decodes every 200 and 400 golden body as JSON.
func TestOutputIsJSON(t *testing.T) {
	mux := testMux()
	for _, target := range []string{
		"/api/products?$expand=orders($count=true)",
		"/api/orders?$expand=product($expand=orders)",
		"/api/products?$filter=nope",
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if !json.Valid(rec.Body.Bytes()) {
			t.Errorf("%s: invalid JSON %s", target, rec.Body)
		}
	}
	if got := string(appendString(nil, "a\"\\\n\x01\u2028\xff")); got != `"a\"\\\n\u0001\u2028\ufffd"` {
		t.Errorf("appendString: %s", got)
	}
}

// TestServiceMethods checks the answers to methods other than GET: the
// service is read-only, and says so in the OData error format.
func TestServiceMethods(t *testing.T) {
	mux := testMux()
	tests := []struct {
		method, target string
		status         int
		allow, code    string
	}{
		{"PUT", "/api/products", 405, "GET, HEAD, OPTIONS", "MethodNotAllowed"},
		{"DELETE", "/api/Products(1)/name", 405, "GET, HEAD, OPTIONS", "MethodNotAllowed"},
		{"POST", "/api/$metadata", 405, "GET, HEAD, OPTIONS", "MethodNotAllowed"},
		{"OPTIONS", "/api/orders(1)", 204, "GET, HEAD, OPTIONS", ""},
		{"DELETE", "/api/nosuch", 404, "", "NotFound"},
		{"HEAD", "/api/products/$count", 200, "", ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
		var body struct {
			Error struct{ Code string }
		}
		json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow || body.Error.Code != tt.code ||
			rec.Header().Get("OData-Version") != "4.0" {
			t.Errorf("%s %s: %d, Allow %q, OData-Version %q, %s", tt.method, tt.target, rec.Code,
				rec.Header().Get("Allow"), rec.Header().Get("OData-Version"), rec.Body)
		}
	}
}

// TestExpandSeveralNavigations expands every kind of navigation of one type
// side by side: each member is separated from the next, whichever comes first.
func TestExpandSeveralNavigations(t *testing.T) {
	type node struct {
		id   int64
		kids []any
	}
	nt := &EntityType{Name: "Node", Key: "id", Properties: []*Property{
		{Name: "id", Type: EdmInt64, Int: func(x any) int64 { return x.(*node).id }}}}
	many := func(x any) []any { return x.(*node).kids }
	one := func(x any) (any, bool) { return x, true }
	nt.Navigation = []*NavProperty{
		{Name: "a", Target: nt, Collection: true, Many: many},
		{Name: "b", Target: nt, Collection: true, Many: many},
		{Name: "c", Target: nt, One: one},
	}
	set := &EntitySet{Name: "Nodes", Type: nt}
	if _, err := NewModel("T", set); err != nil {
		t.Fatal(err)
	}
	x := &node{id: 1, kids: []any{&node{id: 2}}}
	for raw, want := range map[string]string{
		"$expand=a($select=id),b/$count,c($select=id)":   `{"id":1,"a":[{"id":2}],"b@odata.count":1,"c":{"id":1}}`,
		"$expand=b/$count,a($select=id;$count=true)":     `{"id":1,"b@odata.count":1,"a@odata.count":1,"a":[{"id":2}]}`,
		"$select=id&$expand=c($select=id),a($select=id)": `{"id":1,"c":{"id":1},"a":[{"id":2}]}`,
	} {
		q, err := parseQuery(raw, nt, Settings{Allowed: optAll})
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		q.out.metadata = metadataNone
		got, err := q.appendEntity(nil, "", x)
		if err != nil || string(got) != want {
			t.Errorf("%s:\n got %s, %v\nwant %s", raw, got, err, want)
		}
	}
}

// TestComputeAliasThroughNavigation uses an alias whose expression navigates in
// $filter and $orderby: it is checked again there, and must still navigate once.
func TestComputeAliasThroughNavigation(t *testing.T) {
	_, _, os := newTestModel()
	_, orders := testData()
	s := Settings{Allowed: optAll | OptCompute}
	ids := func(raw string) []int64 {
		q, err := parseQuery(raw, os.Type, s)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		page, _, err := q.Evaluate(orders, nil, false)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var out []int64
		for _, x := range page {
			out = append(out, x.(*order).ID)
		}
		return out
	}
	got := ids("$compute=product/price mul quantity as total&$filter=total gt 100&$orderby=total desc,id")
	want := ids("$filter=product/price mul quantity gt 100&$orderby=product/price mul quantity desc,id")
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("with the alias %v, spelled out %v", got, want)
	}
}

// TestComputeAliasErrorPosition: an error about an alias used in $filter points
// into $filter's value, where the alias is named, not into $compute's.
func TestComputeAliasErrorPosition(t *testing.T) {
	_, ps, _ := newTestModel()
	s := Settings{Allowed: optAll | OptCompute}
	for raw, want := range map[string]string{
		"$compute=price mul 2 as total&$filter=total":                "$filter: expression must be Boolean, not Edm.Decimal at position 0",
		"$compute=price mul 2 as total&$filter=orders/any(o: total)": "$filter: expression must be Boolean, not Edm.Decimal at position 14",
	} {
		if _, err := parseQuery(raw, ps.Type, s); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", raw, err, want)
		}
	}
}

// TestDecimalComparedPastScale: a decimal compared with a literal of more digits than
// the scale (a property, an expression, the literal on either side, in a list)
// answers as exact rational arithmetic does.
func TestDecimalComparedPastScale(t *testing.T) {
	_, products, _ := newTestModel()
	prices := []int64{-249901, -249900, -1, 0, 1, 249899, 249900, 249901}
	literals := []string{"24.99000000000000000000000000001", "24.9900000000000", "-24.99000000000000000000000000001",
		"-0.00000000000000000001", "0.00000000000000000001", "24.98999999999999999999", "-0." + strings.Repeat("0", 400) + "1"}
	for _, lit := range literals {
		want, _ := new(big.Rat).SetString(lit)
		for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
			for _, expr := range []string{"price " + op + " " + lit, lit + " " + op + " price", "price add 0 " + op + " " + lit} {
				f, err := parseFilter(expr, products.Type)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range prices {
					c := big.NewRat(p, decimalScale).Cmp(want)
					if strings.HasPrefix(expr, lit) {
						c = -c
					}
					if got := f.Match(&product{Price: p}); got != relOps[op].holds(c) {
						t.Errorf("%s with price %s: %v", expr, formatDecimal(p), got)
					}
				}
			}
		}
		f, err := parseFilter("price in (1000, "+lit+")", products.Type)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range prices {
			if got := f.Match(&product{Price: p}); got != (big.NewRat(p, decimalScale).Cmp(want) == 0) {
				t.Errorf("price in (1000, %s) with price %s: %v", lit, formatDecimal(p), got)
			}
		}
		// With a decimal literal on the other side, the literal past the scale on either.
		for _, dec := range []string{"24.99", "-24.99", "0.0", "1.0"} {
			for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
				for _, pair := range [][2]string{{lit, dec}, {dec, lit}} {
					expr := pair[0] + " " + op + " " + pair[1]
					f, err := parseFilter(expr, products.Type)
					if err != nil {
						t.Fatal(err)
					}
					x, _ := new(big.Rat).SetString(pair[0])
					y, _ := new(big.Rat).SetString(pair[1])
					if got, want := f.Match(&product{}), relOps[op].holds(x.Cmp(y)); got != want {
						t.Errorf("%s: %v, want %v", expr, got, want)
					}
				}
			}
		}
	}
}
