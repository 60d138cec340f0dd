package odata

import (
	"bytes"
	"encoding/xml"
	"strconv"
)

// Metadata returns the CSDL XML document ($metadata) describing the model:
// one schema with the entity types, their keys, properties and navigation
// properties, and an entity container with the entity sets and their
// navigation property bindings.
func (m *Model) Metadata() []byte { return m.metadata(nil, nil) }

// The vocabularies the annotations of a Service's $metadata use, referenced as
// CSDL requires of any namespace a document uses but does not define.
var vocabularies = []struct{ uri, namespace, alias string }{
	{"https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Core.V1.xml", "Org.OData.Core.V1", "Core"},
	{"https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Capabilities.V1.xml", "Org.OData.Capabilities.V1", "Capabilities"},
	{"https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Aggregation.V1.xml", "Org.OData.Aggregation.V1", "Aggregation"},
}

// metadata writes the CSDL document; setAnnotations, if set, gives the
// annotation elements of each entity set, and terms the elements (Term
// definitions) added to the schema. Descriptions of types and properties are
// written as Core.Description.
func (m *Model) metadata(setAnnotations func(*EntitySet) []string, terms []string) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">` + "\n")
	if setAnnotations != nil || m.described() {
		for _, v := range vocabularies {
			b.WriteString("  <edmx:Reference Uri=" + attr(v.uri) + ">\n")
			b.WriteString("    <edmx:Include Namespace=" + attr(v.namespace) + " Alias=" + attr(v.alias) + "/>\n")
			b.WriteString("  </edmx:Reference>\n")
		}
	}
	b.WriteString("  <edmx:DataServices>\n")
	b.WriteString(`    <Schema Namespace=` + attr(m.Namespace) + ` xmlns="http://docs.oasis-open.org/odata/ns/edm">` + "\n")
	for _, t := range m.Types {
		b.WriteString("      <EntityType Name=" + attr(t.Name) + ">\n")
		b.WriteString("        <Key><PropertyRef Name=" + attr(t.keyProperty().Name) + "/></Key>\n")
		for _, p := range t.Properties {
			b.WriteString("        <Property Name=" + attr(p.Name) + " Type=" + attr(p.Type.String()))
			b.WriteString(" Nullable=" + attr(strconv.FormatBool(p.Nullable && p.Name != t.keyProperty().Name)))
			if p.Type == EdmDecimal {
				b.WriteString(` Scale="4"`)
			}
			if p.Description == "" {
				b.WriteString("/>\n")
				continue
			}
			b.WriteString(">\n          " + description(p.Description) + "\n        </Property>\n")
		}
		for _, n := range t.Navigation {
			typ := m.Namespace + "." + n.Target.Name
			if n.Collection {
				typ = "Collection(" + typ + ")"
			}
			b.WriteString("        <NavigationProperty Name=" + attr(n.Name) + " Type=" + attr(typ))
			if !n.Collection {
				b.WriteString(` Nullable="true"`)
			}
			if n.Partner != "" {
				b.WriteString(" Partner=" + attr(n.Partner))
			}
			b.WriteString("/>\n")
		}
		if t.Description != "" {
			b.WriteString("        " + description(t.Description) + "\n")
		}
		b.WriteString("      </EntityType>\n")
	}
	for _, t := range terms {
		b.WriteString("      " + t + "\n")
	}
	b.WriteString("      <EntityContainer Name=" + attr(m.Container) + ">\n")
	for _, s := range m.Sets {
		b.WriteString("        <EntitySet Name=" + attr(s.Name) + " EntityType=" + attr(m.Namespace+"."+s.Type.Name) + ">\n")
		for _, n := range s.Type.Navigation {
			if target := m.setOf(n.Target); target != nil {
				b.WriteString("          <NavigationPropertyBinding Path=" + attr(n.Name) + " Target=" + attr(target.Name) + "/>\n")
			}
		}
		if s.Description != "" {
			b.WriteString("          " + description(s.Description) + "\n")
		}
		if setAnnotations != nil {
			for _, a := range setAnnotations(s) {
				b.WriteString("          " + a + "\n")
			}
		}
		b.WriteString("        </EntitySet>\n")
	}
	b.WriteString("      </EntityContainer>\n")
	b.WriteString("    </Schema>\n  </edmx:DataServices>\n</edmx:Edmx>\n")
	return b.Bytes()
}

// described reports whether any type, property or set has a description.
func (m *Model) described() bool {
	for _, s := range m.Sets {
		if s.Description != "" {
			return true
		}
	}
	for _, t := range m.Types {
		if t.Description != "" {
			return true
		}
		for _, p := range t.Properties {
			if p.Description != "" {
				return true
			}
		}
	}
	return false
}

// description is a Core.Description annotation element.
func description(s string) string {
	return `<Annotation Term="Org.OData.Core.V1.Description" String=` + attr(s) + "/>"
}

// attr quotes s as an XML attribute value.
func attr(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	xml.EscapeText(&b, []byte(s))
	b.WriteByte('"')
	return b.String()
}
