package odata

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzParseQuery feeds arbitrary query strings through parsing, checking,
// compilation and evaluation. It must never panic, every error must be an
// *Error whose message ends with its position, and the position must lie
// within the option value. A query string with a bad escape, a ';' between
// parameters or a repeated system option must be refused (mustRefuse says so
// independently of splitQuery), and so must any accepted query string once such
// a flaw is added to it. The password rule must see through bad escapes.
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
		"x=%70a%73sword", "x=p%%41ssword", "x=PASS%57ORD", "x=%2570assword", "x=pp%61ssword+", "x=passwor%",
		"$filter=-(-price) lt 0 and now() gt createdDate",
		"$filter=price ge 24.99000000000000000000000000001 or -0.00000000001 lt price add 1 or price in (1, 2.000000000000)",
		"$filter=name eq 'p%61ssword'&x=%zz",
		"$top=1;$skip=2",
		"x=1;y=2&$top=1",
		"$top=1&$TOP=2",
		"%24top=1&$top=1",
		"$filter=name eq 'a;b'&x=%3B",
		"$orderby=isActive,isActive,isActive,isActive,isActive,isActive,isActive,isActive,isActive",
		"$filter=id in (1,2,3)&$expand=orders($filter=quantity gt 2;$orderby=id,id)",
		"$filter=length(concat(concat(toupper(name),tolower(name)),concat(name,name))) gt 40",
		"$compute=price mul 2 as d,id div 0 as z&$filter=d gt 10 or z eq null&$orderby=d desc&$select=id,d",
		"$compute=price sub id as x&$select=*&$expand=orders($select=id)",
		"$expand=orders/$count($filter=quantity gt 2)&$filter=orders/$count($filter=quantity ge 1) gt 1",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	_, products, _ := newTestModel()
	items, _ := testData()
	f.Fuzz(func(t *testing.T, raw string) {
		// Small bounds of evaluation, so that it reaches them too.
		settings := Settings{Allowed: optAll | OptCompute, MaxTop: 100, MaxExpansionDepth: 3, Limits: Limits{MaxVisits: 20, MaxStringBytes: 200}}
		checkPasswordRule(t, raw)
		q, err := parseQuery(raw, products.Type, settings)
		if why := mustRefuse(raw); why != "" && err == nil {
			t.Fatalf("%q: accepted, but %s", raw, why)
		}
		if err == nil {
			for _, flaw := range []string{"&x=%zz", "&x=%", "&%zz", "&x=1;y=2", "&x;y", "&" + firstSystemOption(raw)} {
				if flaw == "&" {
					continue
				}
				if _, err := parseQuery(raw+flaw, products.Type, settings); err == nil {
					t.Fatalf("%q accepted with %q added", raw, flaw)
				}
			}
		}
		if err != nil {
			e, ok := asError(err)
			if !ok {
				t.Fatalf("%q: error %T %v is not *Error", raw, err, err)
			}
			if !strings.Contains(e.Error(), " at position ") || e.Pos < 0 || e.Pos > len(raw) {
				t.Fatalf("%q: bad error %q (pos %d)", raw, e.Error(), e.Pos)
			}
			return
		}
		page, n, err := q.Apply(items, nil)
		if err == nil {
			if n > len(items) || len(page) > n {
				t.Fatalf("%q: page %d of %d", raw, len(page), n)
			}
			_, err = q.AppendCollection(nil, "$metadata#Products", page, n, true)
		}
		if e, ok := asError(err); err != nil && (!ok || !strings.Contains(e.Msg, "related entities") && !strings.Contains(e.Msg, "bytes of strings")) {
			t.Fatalf("%q: evaluation failed with %v", raw, err)
		}
	})
}

// mustRefuse returns why the query string must be refused as a whole, or "". It
// restates the rules of splitQuery over url.QueryUnescape, so the two can be
// compared.
func mustRefuse(raw string) string {
	if len(raw) > DefaultLimits.MaxQueryBytes {
		return "it is too long"
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(raw, "&") {
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(rawName)
		_, err2 := url.QueryUnescape(rawValue)
		switch {
		case err1 != nil || err2 != nil:
			return "it has a bad escape"
		case strings.Contains(rawName, ";"), !strings.HasPrefix(name, "$") && strings.Contains(rawValue, ";"):
			return "it has ';' between parameters"
		case strings.HasPrefix(name, "$") && seen[strings.ToLower(name)]:
			return "it repeats " + name
		}
		seen[strings.ToLower(name)] = strings.HasPrefix(name, "$")
	}
	return ""
}

// firstSystemOption returns the first name=value pair of raw whose name starts
// with $, or "".
func firstSystemOption(raw string) string {
	for _, part := range strings.Split(raw, "&") {
		if strings.HasPrefix(part, "$") {
			return part
		}
	}
	return ""
}

// checkPasswordRule checks the password rule against the decoded query string, and
// that a bad escape added anywhere does not hide the word.
func checkPasswordRule(t *testing.T, raw string) {
	t.Helper()
	want := strings.Contains(strings.ToLower(raw), "password")
	if dec, err := url.QueryUnescape(raw); err == nil && strings.Contains(strings.ToLower(dec), "password") {
		want = true
	}
	got := containsPassword(raw)
	if ref := containsPasswordByteByByte(raw); got != ref {
		t.Fatalf("%q: containsPassword says %v, reading byte by byte %v", raw, got, ref)
	}
	if want && !got {
		t.Fatalf("%q: the password rule misses it", raw)
	}
	if got && !(containsPassword(raw+"&x=%zz") && containsPassword("x=%zz&"+raw) && containsPassword("x=%&"+raw)) {
		t.Fatalf("%q: the password rule is hidden by a bad escape", raw)
	}
}

// FuzzParseExpr fuzzes the expression parser alone, checking that
// positions stay inside the input.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{"a eq 1", "x/any(y: y/z gt 1)", "f('it''s', 1.5e3, 2024-01-01T00:00Z)", "not (a) or -b add c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseExpr(s)
		if err != nil {
			e, ok := asError(err)
			if !ok || e.Pos < 0 || e.Pos > len(s) {
				t.Fatalf("%q: bad error %v", s, err)
			}
		}
	})
}

// FuzzServicePath requests arbitrary paths below the service root. The Service
// must never panic, must answer only with a status a read-only service has
// (200, 204, 400, 404; ServeMux's redirects aside), and every error must carry the OData JSON error body
// and OData-Version: 4.0.
func FuzzServicePath(f *testing.F) {
	for _, s := range []string{
		"", "$metadata", "products", "Products(1)", "products(id=1)", "products/1", "products/$count",
		"products(1)/orders", "products(1)/orders(2)/product/name/$value", "orders(7)/product",
		"products(1)/name/$value", "products(", "products()", "products(id=)", "(5)", "products(5)(6)",
		"products(1)/orders/$count/x", "products/search", "nosuch", "products(1)/$value",
	} {
		f.Add(s)
	}
	mux := testMux()
	f.Fuzz(func(t *testing.T, path string) {
		u := &url.URL{Path: "/api/" + path}
		req := httptest.NewRequest("GET", "http://example.com/", nil)
		req.URL = u
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 204:
			return
		case 301, 307:
			return // ServeMux sends an unclean path (/api/./x) to its clean form first
		case 400, 404:
		default:
			t.Fatalf("%q: status %d", path, rec.Code)
		}
		if rec.Header().Get("OData-Version") != "4.0" {
			t.Fatalf("%q: %d without OData-Version: %s", path, rec.Code, rec.Body)
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code == "" || body.Error.Message == "" {
			t.Fatalf("%q: %d with body %s", path, rec.Code, rec.Body)
		}
	})
}

// containsPasswordByteByByte is the password rule read one byte at a time, decoding
// as it goes: the reference containsPassword's jumps are held to.
func containsPasswordByteByByte(raw string) bool {
	return matchPassword(raw, false) || matchPassword(raw, true)
}

func matchPassword(raw string, decode bool) bool {
	const word = "password" // no proper prefix of it recurs inside it, so a mismatch restarts cleanly
	n := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case !decode:
		case c == '+':
			c = ' '
		case c == '%' && i+2 < len(raw) && unhex(raw[i+1]) >= 0 && unhex(raw[i+2]) >= 0:
			c = byte(unhex(raw[i+1])<<4 | unhex(raw[i+2]))
			i += 2
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		switch {
		case c == word[n]:
			n++
			if n == len(word) {
				return true
			}
		case c == word[0]:
			n = 1
		default:
			n = 0
		}
	}
	return false
}
