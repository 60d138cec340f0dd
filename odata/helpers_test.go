package odata

// Query methods only tests use.

// Apply is Evaluate with the count always kept.
func (q *Query) Apply(items []any, restrict func(any) bool) (page []any, count int, err error) {
	return q.Evaluate(items, restrict, true)
}

// AppendCollection is appendCollection with its panic returned as an error.
func (q *Query) AppendCollection(b []byte, context string, page []any, count int, withCount bool) (out []byte, err error) {
	err = run(func() { out = q.appendCollection(b, context, page, count, withCount, nil) })
	return out, err
}
