package odata

import (
	"strings"
	"testing"
)

// FuzzApplySearch feeds arbitrary $apply and $search values, alone and with the
// options that follow them, through parsing, resolution, evaluation and output. It
// must never panic; every error must be an *Error with its position within the
// value; an accepted aggregation must answer at most MaxGroups rows.
func FuzzApplySearch(f *testing.F) {
	seeds := []struct{ apply, search string }{
		{"groupby((category))", ""},
		{"groupby((category),aggregate(price with average as avgPrice, $count as n))", ""},
		{"filter(price gt 100)/groupby((category,isActive),aggregate(price with min as lo, price with max as hi))", ""},
		{"aggregate(price with sum as total, category with countdistinct as c, createdDate with max as d)", ""},
		{"filter(orders/any(o: o/quantity gt 2))/filter(isActive)", "lamp OR desk"},
		{"groupby((id))", ""},
		{"aggregate(name with sum as s)", ""},
		{"groupby((category)/filter(true)", ""},
		{"", `"laptop pro" OR (mouse AND NOT chair) desk`},
		{"", `NOT NOT ((a)) OR "b\"c\\" AND`},
		{"", `"unterminated`},
		{"", `Ünïcode`},
	}
	for _, s := range seeds {
		f.Add(s.apply, s.search, "$orderby=n desc&$top=2&$count=true")
	}
	_, products, _ := newTestModel()
	items, _ := testData()
	limits := Limits{MaxGroups: 3, MaxVisits: 20, MaxStringBytes: 200}
	settings := Settings{Allowed: optAll | OptApply | OptSearch, MaxTop: 100, Limits: limits}
	f.Fuzz(func(t *testing.T, apply, search, rest string) {
		for _, raw := range []string{
			"$apply=" + escapeValue(apply),
			"$search=" + escapeValue(search),
			"$apply=" + escapeValue(apply) + "&" + rest,
			"$search=" + escapeValue(search) + "&" + rest,
		} {
			q, err := parseQuery(raw, products.Type, settings)
			if err != nil {
				e, ok := asError(err)
				if !ok {
					t.Fatalf("%q: error %T %v is not *Error", raw, err, err)
				}
				if !strings.Contains(e.Error(), " at position ") || e.Pos < 0 || e.Pos > len(raw) {
					t.Fatalf("%q: bad error %q (pos %d)", raw, e.Error(), e.Pos)
				}
				continue
			}
			page, n, err := q.Apply(items, nil)
			if err == nil {
				if q.agg != nil && n > limits.MaxGroups || len(page) > max(n, 1) {
					t.Fatalf("%q: page %d of %d", raw, len(page), n)
				}
				_, err = q.AppendCollection(nil, q.contextURL("$metadata", products), page, n, true)
			}
			if e, ok := asError(err); err != nil && !ok {
				t.Fatalf("%q: evaluation failed with %v", raw, e)
			}
		}
	})
}

// escapeValue percent-encodes the characters a query string gives a meaning to,
// so that the fuzzed value arrives whole.
func escapeValue(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "+", "%2B", "#", "%23", ";", "%3B").Replace(s)
}

// TestMaxGroups checks that groupby stops at Limits.MaxGroups groups, with a
// query error, and that the bound is on groups, not on the entities grouped.
func TestMaxGroups(t *testing.T) {
	_, products, _ := newTestModel()
	items, _ := testData() // 6 products in 4 categories
	for _, tt := range []struct {
		apply string
		max   int
		err   string
	}{
		{"groupby((category))", 4, ""},
		{"groupby((category))", 3, "$apply makes more than 3 groups"},
		{"groupby((id))", 5, "$apply makes more than 5 groups"},
		{"aggregate($count as n)", 1, ""},
	} {
		q, err := parseQuery("$apply="+tt.apply, products.Type, Settings{Allowed: OptApply, Limits: Limits{MaxGroups: tt.max}})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = q.Apply(items, nil)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s with MaxGroups %d: error %v, want %q", tt.apply, tt.max, err, tt.err)
		}
	}
}

// TestSearch checks the grammar of $search: precedence, implicit AND, phrases and
// case-insensitive matching over every string property.
func TestSearch(t *testing.T) {
	_, products, _ := newTestModel()
	items, _ := testData()
	for _, tt := range []struct {
		search string
		ids    string
	}{
		{"laptop", "1"},
		{"ELECTRONICS", "1 2"},
		{"furniture chair", "4"},
		{"furniture AND NOT chair", "3"},
		{"mouse OR desk lamp", "2"},        // AND binds tighter: mouse OR (desk AND lamp)
		{"(mouse OR desk) furniture", "3"}, // implicit AND after parentheses
		{`"laptop pro"`, "1"},
		{`"pro laptop"`, ""},
		{"ünïcode", "6"},
		{"ÜNÏCODE", "6"},
		{"NOT r", "5 6"},
		{"and", ""}, // lower-case and is a word
	} {
		q, err := parseQuery("$search="+strings.ReplaceAll(escapeValue(tt.search), " ", "%20"), products.Type, Settings{Allowed: OptSearch})
		if err != nil {
			t.Fatalf("%s: %v", tt.search, err)
		}
		page, _, err := q.Apply(items, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range page {
			ids = append(ids, itoaInt(x.(*product).ID))
		}
		if got := strings.Join(ids, " "); got != tt.ids {
			t.Errorf("$search=%s: got %q, want %q", tt.search, got, tt.ids)
		}
	}
	for _, bad := range []string{"", "a OR", "(a", "a)", `"`, `""`, `"a\b"`, "NOT"} {
		if _, err := parseQuery("$search="+escapeValue(bad), products.Type, Settings{Allowed: OptSearch}); err == nil {
			t.Errorf("$search=%s accepted", bad)
		}
	}
}

func itoaInt(i int64) string {
	return strings.TrimSpace(strings.TrimSuffix(formatDecimal(i*decimalScale), ".0"))
}
