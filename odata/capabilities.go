package odata

import (
	"strconv"
	"strings"
)

// The capability annotations of $metadata, read from each set's collection route
// so that the document cannot drift from what the service does. Limits no
// standard term states are terms of the model's own namespace.

// limitTerms are the model's own terms: name, then description.
var limitTerms = [][2]string{
	{"MaxTop", "The largest $top the collection takes; a larger one is refused (400). Without $top, every entity is sent."},
	{"MaxSkip", "The largest $skip the collection takes; a larger one is refused (400)."},
	{"MaxOrderByKeys", "The most keys one $orderby may have, at the top level or in $expand."},
	{"MaxFilterNodes", "The most expression nodes (names, literals, operators, calls) of the whole query string: $filter and every $orderby key, those in $expand included."},
	{"MaxQueryBytes", "The longest query string, in bytes as sent (percent-encoded)."},
	{"MaxLambdaDepth", "How deeply any and all may nest."},
	{"MaxGroups", "The most groups $apply's groupby may make."},
}

// capabilities are the annotation elements of set, from its routes.
func (s *Service) capabilities(set *EntitySet) []string {
	rs, ok := s.Sets[set.Name]
	if !ok {
		return nil
	}
	st := rs.List.Settings
	l := st.Limits.orDefault()
	has := func(o QueryOption) string { return strconv.FormatBool(st.Allowed&o != 0) }
	const capNS = "Org.OData.Capabilities.V1."
	record := func(term string, props ...string) string {
		return `<Annotation Term="` + term + `"><Record>` + strings.Join(props, "") + `</Record></Annotation>`
	}
	pv := func(name, kind, v string) string {
		return `<PropertyValue Property="` + name + `" ` + kind + `="` + v + `"/>`
	}
	limit := func(name string, n int64) string {
		return `<Annotation Term="` + s.Model.Namespace + "." + name + `" Int="` + strconv.FormatInt(n, 10) + `"/>`
	}
	out := []string{
		`<Annotation Term="` + capNS + `TopSupported" Bool="` + has(OptTop) + `"/>`,
		`<Annotation Term="` + capNS + `SkipSupported" Bool="` + has(OptSkip) + `"/>`,
		record(capNS+"CountRestrictions", pv("Countable", "Bool", has(OptCount))),
		record(capNS+"FilterRestrictions", pv("Filterable", "Bool", has(OptFilter))),
		record(capNS+"SortRestrictions", pv("Sortable", "Bool", has(OptOrderBy))),
		record(capNS+"SearchRestrictions", pv("Searchable", "Bool", has(OptSearch))),
		record(capNS+"SelectSupport", pv("Supported", "Bool", has(OptSelect)), pv("ComputeSupported", "Bool", has(OptCompute))),
	}
	expand := []string{pv("Expandable", "Bool", has(OptExpand))}
	if st.MaxExpansionDepth > 0 {
		expand = append(expand, pv("MaxLevels", "Int", strconv.Itoa(st.MaxExpansionDepth)))
	}
	out = append(out, record(capNS+"ExpandRestrictions", expand...))
	// The service is read-only.
	out = append(out,
		record(capNS+"InsertRestrictions", pv("Insertable", "Bool", "false")),
		record(capNS+"UpdateRestrictions", pv("Updatable", "Bool", "false")),
		record(capNS+"DeleteRestrictions", pv("Deletable", "Bool", "false")))
	if st.Allowed&OptApply != 0 {
		out = append(out, `<Annotation Term="Org.OData.Aggregation.V1.ApplySupported"><Record><PropertyValue Property="Transformations"><Collection>`+
			`<String>filter</String><String>groupby</String><String>aggregate</String>`+
			`</Collection></PropertyValue></Record></Annotation>`)
	}
	if st.MaxTop > 0 {
		out = append(out, limit("MaxTop", st.MaxTop))
	}
	if st.MaxSkip > 0 {
		out = append(out, limit("MaxSkip", st.MaxSkip))
	}
	out = append(out,
		limit("MaxOrderByKeys", int64(l.MaxOrderByKeys)),
		limit("MaxFilterNodes", int64(l.MaxNodes)),
		limit("MaxQueryBytes", int64(l.MaxQueryBytes)),
		limit("MaxLambdaDepth", int64(l.MaxLambdaDepth)))
	if st.Allowed&OptApply != 0 {
		out = append(out, limit("MaxGroups", int64(l.MaxGroups)))
	}
	return out
}
