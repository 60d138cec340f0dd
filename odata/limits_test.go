package odata

import (
	"strings"
	"testing"
)

// terms returns n copies of term joined by sep.
func terms(term, sep string, n int) string {
	return strings.TrimSuffix(strings.Repeat(term+sep, n), sep)
}

// TestLimits checks each bound of Limits at its edge, with the default limits and
// with a route's own: the last query allowed parses, one more is refused with the
// bound's message at the position where parsing stopped.
func TestLimits(t *testing.T) {
	_, products, _ := newTestModel()
	big := Limits{MaxQueryBytes: 4 << 20} // the others stay at their defaults
	tests := []struct {
		name   string
		raw    string
		limits Limits
		msg    string // "" means the query is accepted
		pos    int    // checked when msg is set and pos >= 0
	}{
		{"query bytes at the bound", "$top=1&x=" + strings.Repeat("a", 8<<10-9), Limits{}, "", 0},
		{"query bytes over", "$top=1&x=" + strings.Repeat("a", 8<<10), Limits{}, "query string of 8201 bytes exceeds the maximum of 8192", 0},
		{"query bytes set by the route", "$top=10", Limits{MaxQueryBytes: 6}, "query string of 7 bytes exceeds the maximum of 6", 0},

		{"8 $orderby keys", "$orderby=" + terms("isActive", ",", 8), Limits{}, "", 0},
		{"9 $orderby keys", "$orderby=" + terms("isActive", ",", 9), Limits{}, "$orderby: $orderby has more than 8 keys", 9 * 8},
		{"6,000 $orderby keys", "$top=1&$orderby=" + terms("isActive", ",", 6000), big, "$orderby: $orderby has more than 8 keys", 9 * 8},
		{"$orderby keys in $expand", "$expand=orders($orderby=" + terms("id", ",", 9) + ")", Limits{}, "$expand: $orderby has more than 8 keys", 16 + 8*3},
		{"$orderby keys set by the route", "$orderby=id,name", Limits{MaxOrderByKeys: 1}, "$orderby has more than 1 keys", 3},

		// isActive and isActive ...: n terms are 2n-1 nodes.
		{"200 nodes", "$filter=" + terms("isActive", " and ", 100) + "&$orderby=id", Limits{}, "", 0},
		{"201 nodes across options", "$filter=" + terms("isActive", " and ", 100) + "&$orderby=id,name", Limits{}, "$orderby: query has more than 200 expression nodes", 3},
		{"201 nodes in $filter", "$filter=" + terms("isActive", " and ", 101), Limits{}, "$filter: query has more than 200 expression nodes", 100 * 13},
		{"nodes in $expand count", "$filter=" + terms("isActive", " and ", 100) + "&$expand=orders($filter=true and true)", Limits{}, "$expand: query has more than 200 expression nodes", 20},
		{"in list of 198", "$filter=id in (" + terms("1", ",", 198) + ")", Limits{}, "", 0},
		{"in list of 199", "$filter=id in (" + terms("1", ",", 199) + ")", Limits{}, "query has more than 200 expression nodes", 7 + 2*198},
		{"10,000 terms", "$filter=" + terms("id eq 1", " or ", 10000), big, "$filter: query has more than 200 expression nodes", -1},
		{"nodes set by the route", "$filter=id eq 1", Limits{MaxNodes: 2}, "query has more than 2 expression nodes", 6},

		{"depth 64", "$filter=" + strings.Repeat("(", 63) + "true" + strings.Repeat(")", 63), Limits{}, "", 0},
		{"depth 65", "$filter=" + strings.Repeat("(", 64) + "true" + strings.Repeat(")", 64), Limits{}, "nested too deeply (more than 64 levels)", 64},
		{"not 10,000 deep", "$filter=" + strings.Repeat("not ", 10000) + "true", big, "nested too deeply", 256},
		{"- 10,000 deep", "$filter=" + strings.Repeat("-", 10000) + "1 eq 1", big, "nested too deeply", 64},
		{"calls 10,000 deep", "$filter=" + strings.Repeat("tolower(", 10000) + "name" + strings.Repeat(")", 10000) + " eq ''", big, "nested too deeply", 32 * 8},
		{"depth set by the route", "$filter=((true))", Limits{MaxDepth: 2}, "nested too deeply (more than 2 levels)", 2},
		{"$expand depth bounded by MaxDepth", "$expand=" + strings.Repeat("orders($expand=product($expand=", 40), big, "nested too deeply", -1},

		{"lambdas 2 deep", "$filter=orders/any(o: o/product/orders/all(p: true))", Limits{}, "", 0},
		{"lambdas 3 deep", "$filter=orders/any(o: o/product/orders/any(p: p/product/orders/any(q: true)))", Limits{}, "any and all nested more than 2 deep", 55},
		{"lambdas set by the route", "$filter=orders/any(o: true)", Limits{MaxLambdaDepth: 1}, "", 0},
		{"lambdas set by the route, over", "$filter=orders/any(o: o/product/orders/any())", Limits{MaxLambdaDepth: 1}, "any and all nested more than 1 deep", 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Settings{Allowed: optAll, MaxExpansionDepth: 100, Limits: tt.limits}
			_, err := parseQuery(tt.raw, products.Type, s)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := asError(err)
			if !ok {
				t.Fatalf("got %v, want an *Error containing %q", err, tt.msg)
			}
			if !strings.Contains(e.Error(), tt.msg) || tt.pos >= 0 && e.Pos != tt.pos {
				t.Fatalf("got %q (position %d), want %q at position %d", e.Error(), e.Pos, tt.msg, tt.pos)
			}
		})
	}
}

// TestLimitsDefaults checks that a zero field means the default, never "no limit".
func TestLimitsDefaults(t *testing.T) {
	if got := (Limits{}).orDefault(); got != DefaultLimits {
		t.Errorf("zero Limits = %+v, want DefaultLimits %+v", got, DefaultLimits)
	}
	got := Limits{MaxNodes: 7, MaxLambdaDepth: -1}.orDefault()
	want := DefaultLimits
	want.MaxNodes = 7
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, v := range []int{DefaultLimits.MaxQueryBytes, DefaultLimits.MaxNodes, DefaultLimits.MaxOrderByKeys, DefaultLimits.MaxDepth, DefaultLimits.MaxLambdaDepth} {
		if v <= 0 {
			t.Errorf("DefaultLimits has a zero or negative bound: %+v", DefaultLimits)
		}
	}
}

// TestParseExprLimits checks that the expression entry points are bounded too.
func TestParseExprLimits(t *testing.T) {
	_, products, _ := newTestModel()
	long := terms("id eq 1", " or ", 10000)
	if _, err := parseExpr(long); err == nil || !strings.Contains(err.Error(), "more than 200 expression nodes") {
		t.Errorf("parseExpr: %v", err)
	}
	if _, err := parseFilter(long, products.Type); err == nil || !strings.Contains(err.Error(), "$filter: query has more than 200 expression nodes") {
		t.Errorf("parseFilter: %v", err)
	}
}
