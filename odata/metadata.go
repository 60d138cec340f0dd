package odata

import (
	"bytes"
	"encoding/xml"
	"strconv"
)

// The vocabularies the annotations of $metadata use, referenced as CSDL requires
// of any namespace a document uses but does not define.
var vocabularies = []struct{ uri, namespace, alias string }{
	{"https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Core.V1.xml", "Org.OData.Core.V1", "Core"},
	{"https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Capabilities.V1.xml", "Org.OData.Capabilities.V1", "Capabilities"},
	{"https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Aggregation.V1.xml", "Org.OData.Aggregation.V1", "Aggregation"},
}

// document is the CSDL XML document ($metadata) of the model: one schema with
// the entity types, the terms of the limits, and an entity container whose sets
// are annotated with their capabilities. Descriptions are Core.Description.
func (s *Service) document() []byte {
	m := s.Model
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">` + "\n")
	for _, v := range vocabularies {
		b.WriteString("  <edmx:Reference Uri=" + attr(v.uri) + ">\n")
		b.WriteString("    <edmx:Include Namespace=" + attr(v.namespace) + " Alias=" + attr(v.alias) + "/>\n")
		b.WriteString("  </edmx:Reference>\n")
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
	for _, t := range limitTerms {
		b.WriteString(`      <Term Name="` + t[0] + `" Type="Edm.Int32" AppliesTo="EntitySet">` + description(t[1]) + "</Term>\n")
	}
	b.WriteString("      <EntityContainer Name=" + attr(m.Container) + ">\n")
	for _, set := range m.Sets {
		b.WriteString("        <EntitySet Name=" + attr(set.Name) + " EntityType=" + attr(m.Namespace+"."+set.Type.Name) + ">\n")
		for _, n := range set.Type.Navigation {
			if target := m.setOf(n.Target); target != nil {
				b.WriteString("          <NavigationPropertyBinding Path=" + attr(n.Name) + " Target=" + attr(target.Name) + "/>\n")
			}
		}
		if set.Description != "" {
			b.WriteString("          " + description(set.Description) + "\n")
		}
		for _, a := range s.capabilities(set) {
			b.WriteString("          " + a + "\n")
		}
		b.WriteString("        </EntitySet>\n")
	}
	b.WriteString("      </EntityContainer>\n")
	b.WriteString("    </Schema>\n  </edmx:DataServices>\n</edmx:Edmx>\n")
	return b.Bytes()
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
