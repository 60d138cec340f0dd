package odata

import (
	"strconv"
	"strings"
	"time"

	"quartet/internal/jsonstr"
)

// appendCollection appends {"@odata.context":...,"@odata.count":N,"count":N,
// "value":[...]}, the counts only withCount. flush, if set, is called with what
// is encoded whenever it passes flushSize, and encoding goes on in the buffer it
// returns, so a long collection is never in memory whole. It panics as evaluate.
func (q *Query) appendCollection(b []byte, context string, page []any, count int, withCount bool, flush func([]byte) []byte) []byte {
	b = append(b, '{')
	if q.out.metadata != metadataNone {
		b = append(b, `"@odata.context":`...)
		b = appendString(b, context)
		b = append(b, ',')
	}
	if withCount { // counts stay in odata.metadata=none: they are data the client asked for
		b = append(b, `"@odata.count":`...)
		b = q.out.appendNumber(b, int64(count), EdmInt64)
		// The contract's own member, a JSON number in every format.
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(count), 10)
		b = append(b, ',')
	}
	b = append(b, `"value":`...)
	return append(q.appendArray(b, page, flush), '}')
}

// flushSize is how much of a streamed collection is encoded before it is sent.
const flushSize = 32 << 10

// appendEntity appends a single entity; it fails as Evaluate does, as $expand
// evaluates its nested options.
func (q *Query) appendEntity(b []byte, context string, x any) (out []byte, err error) {
	err = run(func() {
		b = append(b, '{')
		comma := q.out.metadata != metadataNone
		if comma {
			b = append(b, `"@odata.context":`...)
			b = appendString(b, context)
			if q.etag != "" {
				b = append(b, `,"@odata.etag":`...)
				b = appendString(b, q.etag)
			}
		}
		out = q.appendFields(b, x, comma)
	})
	return out, err
}

// appendArray appends the entities of items as a JSON array, calling flush (if
// not nil) as appendCollection says.
func (q *Query) appendArray(b []byte, items []any, flush func([]byte) []byte) []byte {
	b = append(b, '[')
	for i, x := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = q.appendFields(b, x, false)
		if flush != nil && len(b) >= flushSize {
			b = flush(b)
		}
	}
	return append(b, ']')
}

// appendFields writes the members of an entity object, in model order, then its
// expansions in $expand order, and its closing brace (the opening one is
// written); a missing single-valued navigation is null. It panics as evaluate.
func (q *Query) appendFields(b []byte, x any, comma bool) []byte {
	if q.agg != nil {
		if comma {
			b = append(b, ',')
		}
		return q.agg.appendRow(b, x.(row), q.out)
	}
	full := q.out.metadata == metadataFull
	if full {
		b = q.appendControl(b, x, comma)
		comma = true
	}
	props := q.Type.Properties
	if q.selected != nil {
		props = q.selected
	}
	for _, p := range props {
		if a := edmTypes[p.Type].annotation; full && a != "" {
			b = appendMember(b, comma, p.Name+"@odata.type")
			b = appendString(b, a)
			comma = true
		}
		b = appendMember(b, comma, p.Name)
		b = q.out.appendValue(b, p, x)
		comma = true
	}
	if len(q.computedSel) > 0 {
		b = q.appendComputed(b, x, comma)
		comma = true
	}
	for _, e := range q.expand {
		if !e.nav.Collection {
			b = appendMember(b, comma, e.nav.Name)
			if y, ok := e.nav.One(x); ok && (e.q.filter == nil || e.q.filter.Match(y)) {
				b = append(b, '{')
				b = e.q.appendFields(b, y, false)
			} else {
				b = append(b, "null"...)
			}
			comma = true
			continue
		}
		// nav/$count writes only the count.
		counted := e.count || e.q.count
		page, n := e.q.evaluate(e.nav.Many(x), nil, counted) // n only when counted
		if counted {
			b = appendMember(b, comma, e.nav.Name+"@odata.count")
			b = q.out.appendNumber(b, int64(n), EdmInt64)
			comma = true
		}
		if !e.count {
			b = appendMember(b, comma, e.nav.Name)
			b = e.q.appendArray(b, page, nil)
			comma = true
		}
	}
	return append(b, '}')
}

// appendMember writes the name of a member and its colon, after a comma if comma is set.
func appendMember(b []byte, comma bool, name string) []byte {
	if comma {
		b = append(b, ',')
	}
	return append(appendString(b, name), ':')
}

// quotes reports whether f writes values of kind as JSON strings: with
// IEEE754Compatible, Edm.Decimal and Edm.Int64 values are strings.
func (f format) quotes(kind EdmType) bool {
	return f.ieee754 && (kind == EdmDecimal || kind == EdmInt64)
}

func (f format) appendValue(b []byte, p *Property, x any) []byte {
	if f.quotes(p.Type) {
		return append(appendValue(append(b, '"'), p, x), '"')
	}
	return appendValue(b, p, x)
}

// appendNumber writes v, an integer or (kind EdmDecimal) a decimal, in format f.
func (f format) appendNumber(b []byte, v int64, kind EdmType) []byte {
	switch {
	case f.quotes(kind):
		return append(format{}.appendNumber(append(b, '"'), v, kind), '"') // the default format quotes nothing
	case kind == EdmDecimal:
		return appendDecimal(b, v)
	}
	return strconv.AppendInt(b, v, 10)
}

func appendValue(b []byte, p *Property, x any) []byte {
	switch p.Type {
	case EdmInt32, EdmInt64:
		return strconv.AppendInt(b, p.Int(x), 10)
	case EdmDecimal:
		return appendDecimal(b, p.Decimal(x))
	case EdmString:
		return appendString(b, p.String(x))
	case EdmBoolean:
		return strconv.AppendBool(b, p.Bool(x))
	}
	return appendTime(b, p.Time(x))
}

// appendTime writes RFC 3339 in UTC, fractional seconds only when present.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendString appends s as a JSON string, as encoding/json writes it but for <, > and &.
func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s) }

// projection lists the members of q's answer when they are not the entity's:
// the rows' columns, or what $select and $expand chose.
func (q *Query) projection() string {
	var parts []string
	if q.agg != nil {
		for _, c := range q.agg.cols {
			parts = append(parts, c.name)
		}
	}
	if q.explicit && q.selected == nil {
		parts = append(parts, "*")
	}
	for _, p := range q.selected {
		parts = append(parts, p.Name)
	}
	for _, c := range q.computedSel {
		parts = append(parts, c.name)
	}
	for _, e := range q.expand {
		if !e.count { // a count is no projection of the related entities
			parts = append(parts, e.nav.Name+"("+e.q.projection()+")")
		}
	}
	return strings.Join(parts, ",")
}

// contextURL returns the context URL of a collection of set, its projection in
// parentheses if it has one.
func (q *Query) contextURL(metadata string, set *EntitySet) string {
	if p := q.projection(); p != "" {
		return metadata + "#" + set.Name + "(" + p + ")"
	}
	return metadata + "#" + set.Name
}
