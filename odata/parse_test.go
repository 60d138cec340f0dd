package odata

import (
	"strings"
	"testing"
)

// TestFilterErrorPositions checks the position reported for invalid
// $filter expressions over the test Product type.
func TestFilterErrorPositions(t *testing.T) {
	_, products, _ := newTestModel()
	tests := []struct {
		expr string
		pos  int
		msg  string // substring of the message
	}{
		{"", 0, "expected expression"},
		{"   ", 3, "expected expression"},
		{"name eq", 7, "expected expression after 'eq'"},
		{"name eq'x'", 7, "whitespace"},
		{"name eq 'x' and", 15, "expected expression"},
		{"nme eq 'x'", 0, "unknown property nme"},
		{"price gt 5 and nme eq 1", 15, "unknown property nme"},
		{"name eq 1", 5, "cannot compare Edm.String with Edm.Int64"},
		{"price eq 'x'", 6, "cannot compare"},
		{"price", 0, "must be Boolean"},
		{"1 add 2", 2, "must be Boolean"},
		{"(price gt 5", 11, "expected ')'"},
		{"price gt 5)", 10, "found ')'"},
		{"price gt (5", 11, "expected ')'"},
		{"name eq 'abc", 8, "unterminated"},
		{"price gtt 5", 6, "found 'gtt'"},
		{"price eq 42.", 12, "digit after '.'"},
		{"price eq .5", 9, "unexpected character"},
		{"price eq 1e", 11, "exponent"},
		{"price eq -0.314e1e2", 17, "unexpected character"},
		{"price eq 12abc", 11, "in number"},
		{"createdDate gt 2024-13-01", 21, "month out of range"},
		{"createdDate gt 2024-02-30", 23, "day out of range"},
		{"createdDate gt 2024-01-01T24:00Z", 27, "hour out of range"},
		{"createdDate gt 2024-01-01T23:60Z", 29, "minute out of range"},
		{"createdDate gt 2024-01-01T10:00", 31, "expected 'Z' or offset"},
		{"createdDate gt 2024-01-01T10", 28, "expected ':'"},
		{"contains(name)", 0, "takes 2 arguments"},
		{"substring(name,1,2,3) eq 'x'", 0, "takes 2 or 3 arguments"},
		{"contains(name,1)", 0, "cannot be applied"},
		{"price gt 5 and contains(price,'1')", 15, "cannot be applied"},
		{"foo(name)", 0, "unknown function foo"},
		{"name eq foo()", 8, "unknown function foo"},
		{"contains(name,'a'", 17, "expected ')'"},
		{"contains(name 'a')", 14, "expected ')'"},
		{"isActive gt true", 9, "cannot compare"},
		{"not price", 0, "operator not"},
		{"-name eq 'a'", 0, "operator -"},
		{"name has 'x'", 5, "enumeration"},
		{"id in (1,id)", 9, "only literals"},
		{"id in (1,2", 10, "expected ')'"},
		{"id in 1", 6, "expected '(' after in"},
		{"id in ('a')", 7, "cannot be compared"},
		{"orders/quantity gt 1", 7, "must be followed by any"},
		{"orders/any(o: o/nope gt 1)", 16, "unknown property nope on Order"},
		{"orders/any(o: o/quantity)", 14, "must be Boolean"},
		{"orders/any(o o/quantity gt 1)", 13, "expected ':'"},
		{"orders/any(1: true)", 11, "expected lambda variable"},
		{"orders/all()", 11, "all requires a lambda expression"},
		{"any()", 3, "must follow a collection path"},
		{"name/any(x: true)", 5, "requires a collection"},
		{"orders/any(o: orders/any(o: true))", 21, "already defined"},
		{"orders/any(o: p/quantity gt 1)", 14, "unknown property p"},
		{"name/length eq 1", 5, "cannot navigate from primitive"},
		{"orders/$count/x eq 1", 7, "must be followed by"},
		{"$count eq 1", 0, "$count is not supported"},
		{"$root/name eq 'x'", 0, "$root is not supported"},
		{"name eq $", 9, "expected identifier after '$'"},
		{"name eq 'a' # 1", 12, "unexpected character '#'"},
		{"name eq \"a\"", 8, "unexpected character"},
		{"price eq [1]", 9, "unexpected character '['"},
		{"name / x", 5, "found '/'"},
		{"orders eq null", 7, "cannot compare collection"},
		{"(" + strings.Repeat("(", 70) + "true" + strings.Repeat(")", 71), 64, "nested too deeply"},
		{strings.Repeat("not ", 70) + "true", 256, "nested too deeply"},
		{strings.Repeat("-", 70) + "1 eq 1", 64, "nested too deeply"},
	}
	for _, tt := range tests {
		_, err := parseFilter(tt.expr, products.Type)
		e, ok := asError(err)
		if !ok {
			t.Errorf("%q: got error %v, want *Error at %d", tt.expr, err, tt.pos)
			continue
		}
		if e.Pos != tt.pos || !strings.Contains(e.Msg, tt.msg) {
			t.Errorf("%q: got %q, want %q at position %d", tt.expr, e.Error(), tt.msg, tt.pos)
		}
		if !strings.HasSuffix(e.Error(), " at position "+itoa(tt.pos)) {
			t.Errorf("%q: message %q does not end with the position", tt.expr, e.Error())
		}
	}
}

func itoa(i int) string { return formatDecimal(int64(i) * decimalScale) }

// TestParseTree checks precedence and associativity by printing the tree.
func TestParseTree(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a or b and c", "(a or (b and c))"},
		{"a and b or c", "((a and b) or c)"},
		{"a eq 1 and b ne 2", "((a eq 1) and (b ne 2))"},
		{"a add b mul c", "(a add (b mul c))"},
		{"a sub b sub c", "((a sub b) sub c)"},
		{"a div b mod c divby d", "(((a div b) mod c) divby d)"},
		{"not a eq b", "((not a) eq b)"},
		{"not (a eq b)", "(not (a eq b))"},
		{"-a add b", "((- a) add b)"},
		{"- 1", "(- 1)"},
		{"-1", "-1"},
		{"a add b gt c", "((a add b) gt c)"},
		{"a gt b eq c lt d", "((a gt b) eq (c lt d))"},
		{"a in (1,2) eq true", "((a in [1 2]) eq true)"},
		{"x/any(y: y/z gt 1 or y/w)", "x/any(y: ((y/z gt 1) or y/w))"},
		{"x/any()", "x/any()"},
		{"x/$count($filter=y gt 1 and z) gt 2", "(x/$count($filter=((y gt 1) and z)) gt 2)"},
		{"f(a, g(b), 'it''s')", "f(a g(b) 'it''s')"},
		{"A EQ 'x' AnD B Ne null", "((A eq 'x') and (B ne null))"},
		{"d gt 2024-06-01 and t lt 2024-06-01T10:00:00.5+02:00", "((d gt 2024-06-01) and (t lt 2024-06-01T10:00:00.5+02:00))"},
		{"p eq 19.99 or q eq 1.5e3 or r eq 123456789012345678901", "(((p eq 19.99) or (q eq 1500)) or (r eq 1.2345678901234568e+20))"},
	}
	for _, tt := range tests {
		e, err := parseExpr(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got := exprString(e); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}
