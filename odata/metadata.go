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
func (m *Model) Metadata() []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">` + "\n")
	b.WriteString("  <edmx:DataServices>\n")
	b.WriteString(`    <Schema Namespace=` + attr(m.Namespace) + ` xmlns="http://docs.oasis-open.org/odata/ns/edm">` + "\n")
	for _, t := range m.Types {
		b.WriteString("      <EntityType Name=" + attr(t.Name) + ">\n")
		b.WriteString("        <Key><PropertyRef Name=" + attr(t.KeyProperty().Name) + "/></Key>\n")
		for _, p := range t.Properties {
			b.WriteString("        <Property Name=" + attr(p.Name) + " Type=" + attr(p.Type.String()))
			b.WriteString(" Nullable=" + attr(strconv.FormatBool(p.Nullable && p.Name != t.KeyProperty().Name)))
			if p.Type == EdmDecimal {
				b.WriteString(` Scale="4"`)
			}
			b.WriteString("/>\n")
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
		b.WriteString("      </EntityType>\n")
	}
	b.WriteString("      <EntityContainer Name=" + attr(m.Container) + ">\n")
	for _, s := range m.Sets {
		b.WriteString("        <EntitySet Name=" + attr(s.Name) + " EntityType=" + attr(m.Namespace+"."+s.Type.Name) + ">\n")
		for _, n := range s.Type.Navigation {
			if target := m.SetOf(n.Target); target != nil {
				b.WriteString("          <NavigationPropertyBinding Path=" + attr(n.Name) + " Target=" + attr(target.Name) + "/>\n")
			}
		}
		b.WriteString("        </EntitySet>\n")
	}
	b.WriteString("      </EntityContainer>\n")
	b.WriteString("    </Schema>\n  </edmx:DataServices>\n</edmx:Edmx>\n")
	return b.Bytes()
}

// attr quotes s as an XML attribute value.
func attr(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	xml.EscapeText(&b, []byte(s))
	b.WriteByte('"')
	return b.String()
}
