// Package odata serves the subset of OData v4.01 that quartet needs, without an
// OData library: the system query options ($filter, $orderby, $select, $expand,
// $top, $skip, $count, $format, and where a route allows them $apply, $search
// and $compute) parsed, type-checked and compiled into closures over the
// caller's typed getters; resource paths as $metadata names them; $batch; JSON
// answers and a CSDL $metadata document. The caller describes each entity type
// (NewModel), fills a Route per endpoint and serves them with a Service.
//
// Semantics worth knowing:
//
//   - Property names, operators, keywords and functions match case-insensitively;
//     lambda variables do not. Precedence, tightest first: member access and
//     calls; not and -; mul div divby mod; add sub; gt ge lt le has in; eq ne;
//     and; or; all left-associative, so "not a eq b" is "(not a) eq b".
//   - Decimals are int64 counts of 1/10,000: comparison, add, sub and mod are
//     exact, mul and div round half away from zero to four digits. A literal
//     with more digits is a double, but compares with a decimal exactly (zeros
//     past the scale are the same decimal). Overflow and division by zero give null.
//     Integer div truncates; divby divides as decimal.
//   - A Date compared with a DateTimeOffset is midnight UTC; now() is fixed once
//     per request (Settings.Now).
//   - Null propagates: null eq null is true, null gt x false, null and false is
//     false, null or true is true; $filter keeps what is true; $orderby sorts
//     nulls first ascending, last descending. A missing single-valued navigation is null.
//   - String functions count runes. $search matches terms case-insensitively
//     in any string property.
//   - Output keeps the model's property order; expansions follow in $expand
//     order. $expand takes nested options, bounded by the route's limits.
//   - $apply takes filter() then at most one groupby or aggregate; rows are
//     ordered by $orderby, then by the grouping properties ascending, and
//     $top, $skip and $count apply to them.
//   - $format or Accept choose odata.metadata and IEEE754Compatible; any other
//     format is 406.
//   - Limits bound what one query string may ask for, while it is parsed, and
//     what its evaluation reaches, as it runs.
//   - Every query error is an *Error whose message ends in " at position N",
//     the byte offset in the percent-decoded option value (for $expand, in its
//     value), or in the raw query string for the query string as a whole.
package odata
