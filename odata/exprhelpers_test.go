package odata

import "time"

// Entry points the tests use to reach the parser, the compiler and the
// decimal format without a request around them; routes go through parseQuery.

// parseExpr parses a common expression (the syntax of $filter) without
// resolving names. Positions are byte offsets into s.
func parseExpr(s string) (Expr, error) {
	var e Expr
	err := run(func() {
		p := newParser(s, newBudget(Limits{}))
		e = p.expr()
		p.end()
	})
	return e, err
}

// parseFilter parses, checks and compiles a $filter expression (already
// percent-decoded) for entity type t. The expression is held to
// DefaultLimits, except MaxVisits and MaxStringBytes: the filter is for any
// number of uses, not one request, so its evaluation is not counted (routes use
// parseQuery).
func parseFilter(expr string, t *EntityType) (*Filter, error) {
	var f *Filter
	err := run(func() {
		p := newParser(expr, newBudget(Limits{}))
		e := p.expr()
		p.end()
		f = compileFilter(e, t, &compiler{now: time.Now()}, nil)
	})
	if err != nil {
		if e, ok := err.(*Error); ok && e.Option == "" {
			e.Option = "$filter"
		}
		return nil, err
	}
	return f, nil
}

// formatDecimal formats a value in units of 1/decimalScale without trailing
// zeros: 199900 is "19.99", 50000 is "5", 5000 is "0.5".
func formatDecimal(v int64) string { return string(appendDecimal(nil, v)) }
