// Package odata implements the subset of the OData v4.01 URL conventions that
// quartet serves: parsing of the system query options ($filter, $orderby,
// $select, $expand, $top, $skip, $count, $format, and where a route allows
// them $apply, $search and $compute), a type checker, evaluation of the
// checked expressions over in-memory entities, JSON output and a CSDL
// $metadata document. It uses no OData library.
//
// The package knows nothing about where entities come from. The caller
// describes each entity type with an EntityType whose properties carry
// typed getters over an opaque entity value (any), builds a Model with
// NewModel, fills a Route per endpoint, and serves them with a Service, which
// resolves resource paths as $metadata names them: the service document,
// entity sets in any letter case, keys ((5), (id=5) or /5), navigation, /$count,
// properties and /$value. Query options are parsed (parseQuery), resolved
// against the model, type-checked and compiled into closures calling the
// getters directly.
//
// Semantics worth knowing:
//
//   - Names of properties in query options match case-insensitively;
//     operators, keywords and function names are case-insensitive too
//     (OData 4.01). Lambda variables are case-sensitive.
//   - Operator precedence, tightest first: member access and calls; unary
//     not and -; mul div divby mod; add sub; gt ge lt le has in; eq ne; and;
//     or. All binary operators are left-associative. "not a eq b" is
//     therefore "(not a) eq b", a type error when a is not Boolean.
//   - Decimals are int64 counts of 1/10,000. Comparison, add, sub and mod
//     are exact; mul and div are rounded half away from zero to four
//     fractional digits (computed exactly in 128 bits first). Integers
//     compare with decimals exactly. A decimal literal with more than four
//     fractional digits becomes a double, and the comparison is then done
//     in float64. Overflow and division or modulo by zero give null.
//   - Integer div truncates; divby always divides as decimal (or double).
//   - A Date literal (2024-06-01) compared with a DateTimeOffset is taken as
//     midnight UTC; date(x) gives the calendar date of x in its own offset.
//   - Null propagates: a missing single-valued navigation (product/name
//     when product is absent) is null; null eq null is true, null compared
//     by gt/ge/lt/le is false, null and false is false, null or true is
//     true, and $filter keeps only entities for which it is true. In
//     $orderby nulls sort first ascending.
//   - String functions count characters (runes), not bytes. substring with
//     a start beyond the end gives the empty string; a negative start counts as 0.
//   - now() is fixed once per request (Settings.Now can supply it).
//   - $select lists structural properties only; output keeps the model's
//     property order regardless of the order in $select. Expanded
//     navigation properties follow, in $expand order; with a nested
//     $count=true, "nav@odata.count" precedes "nav".
//   - Options nested in $expand ($filter, $orderby, $top, $skip, $select,
//     $expand, $count; the $ is optional there) are allowed whenever $expand
//     is; the route's MaxTop, MaxSkip and MaxExpansionDepth apply to them.
//     On a single-valued navigation only $filter, $select and $expand are
//     allowed; a filtered-out related entity is written as null.
//   - $apply takes filter(), then at most one groupby or aggregate (sum, min,
//     max, average, countdistinct, $count); rows come out in ascending order of
//     the grouping properties, and $orderby, $top, $skip and $count apply to
//     them. average is a decimal rounded to four digits; over no entities it
//     and min and max are null. Limits.MaxGroups bounds the groups.
//   - $search matches terms case-insensitively as substrings of any string
//     property; NOT binds tighter than AND (or juxtaposition), AND than OR.
//   - Batch serves $batch, JSON (4.01) and multipart/mixed (4.0): read
//     requests only, each through the caller's handler as if sent alone,
//     bounded by Limits.MaxBatchRequests, MaxBatchBytes and
//     MaxBatchAnswerBytes.
//   - $compute (where a route allows it) names Int and Decimal arithmetic
//     with "as" aliases; $select writes an alias only when it names it (or
//     *), and $filter and $orderby use it as the expression it stands for.
//     /$count($filter=...) in an expression and $expand=nav/$count (with a
//     nested $filter) count only the related entities the condition holds for.
//   - $format (json, or application/json with parameters) or else Accept
//     choose odata.metadata=none|minimal|full and IEEE754Compatible=true
//     (decimals and Int64 counts as strings), echoed in Content-Type; any
//     other format is 406. Full metadata adds each entity's @odata.type, id
//     and editLink. A Route with ETag set gives single entities a strong ETag
//     (a hash of every property value), as header and @odata.etag, and
//     answers 304 to an If-None-Match that names it.
//   - A Service's $metadata states each set's capabilities
//     (Org.OData.Capabilities.V1) and limits from its routes' Settings.
//   - The unsupported OData options ($levels, $skiptoken, ...) are errors,
//     as are unknown $-options; parameters not
//     starting with $ are ignored, but only once the query string as a whole
//     is well-formed: '&' is its only separator (a ';' between parameters is
//     an error), every percent-escape of every parameter is valid, and no
//     system option is given twice in any letter case.
//   - Limits bound what one query string can ask for: its length, its
//     expression nodes, $orderby keys, nesting and any/all depth, each
//     checked while parsing, before what it counts is built; and the
//     related entities its evaluation reaches and the string bytes it
//     builds, counted as it runs.
//   - Every query error is an *Error whose message ends in " at position N",
//     N being the byte offset in the percent-decoded option value (for
//     errors inside $expand, in the $expand value), or in the raw query
//     string for an error of the query string as a whole.
package odata
