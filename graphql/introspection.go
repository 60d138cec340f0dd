package graphql

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Introspection (spec section 4). The introspection types are written in
// SDL, built once and shared by every schema; their resolvers read the
// schema's own *Type, *FieldDef, ... values.

const introspectionSDL = `
type __Schema {
  description: String
  types: [__Type!]!
  queryType: __Type!
  mutationType: __Type
  subscriptionType: __Type
  directives: [__Directive!]!
}

type __Type {
  kind: __TypeKind!
  name: String
  description: String
  specifiedByURL: String
  fields(includeDeprecated: Boolean = false): [__Field!]
  interfaces: [__Type!]
  possibleTypes: [__Type!]
  enumValues(includeDeprecated: Boolean = false): [__EnumValue!]
  inputFields(includeDeprecated: Boolean = false): [__InputValue!]
  ofType: __Type
  isOneOf: Boolean
}

enum __TypeKind {
  SCALAR
  OBJECT
  INTERFACE
  UNION
  ENUM
  INPUT_OBJECT
  LIST
  NON_NULL
}

type __Field {
  name: String!
  description: String
  args(includeDeprecated: Boolean = false): [__InputValue!]!
  type: __Type!
  isDeprecated: Boolean!
  deprecationReason: String
}

type __InputValue {
  name: String!
  description: String
  type: __Type!
  defaultValue: String
  isDeprecated: Boolean!
  deprecationReason: String
}

type __EnumValue {
  name: String!
  description: String
  isDeprecated: Boolean!
  deprecationReason: String
}

type __Directive {
  name: String!
  description: String
  isRepeatable: Boolean!
  locations: [__DirectiveLocation!]!
  args(includeDeprecated: Boolean = false): [__InputValue!]!
}

enum __DirectiveLocation {
  QUERY
  MUTATION
  SUBSCRIPTION
  FIELD
  FRAGMENT_DEFINITION
  FRAGMENT_SPREAD
  INLINE_FRAGMENT
  VARIABLE_DEFINITION
  SCHEMA
  SCALAR
  OBJECT
  FIELD_DEFINITION
  ARGUMENT_DEFINITION
  INTERFACE
  UNION
  ENUM
  ENUM_VALUE
  INPUT_OBJECT
  INPUT_FIELD_DEFINITION
  DIRECTIVE_DEFINITION
}
`

var (
	introspectionOnce   sync.Once
	introspectionSchema *Schema
)

// introspectionTypes returns a pseudo-schema holding the introspection types.
func introspectionTypes() *Schema {
	introspectionOnce.Do(buildIntrospection)
	return introspectionSchema
}

func buildIntrospection() {
	doc, err := parse(introspectionSDL, 0)
	if err != nil {
		panic(err)
	}
	s := &Schema{types: map[string]*Type{}, directives: map[string]*DirectiveDef{}}
	b := &schemaBuilder{s: s}
	if err := b.build(doc, false); err != nil {
		panic(err)
	}
	for _, t := range s.typeList {
		t.builtin = true
	}
	bindIntrospection(s)
	introspectionSchema = s
}

// The meta fields every schema has (spec 4.1, 4.2).
var (
	typenameField = &FieldDef{Name: "__typename", Type: &Type{Kind: NonNull, OfType: builtinScalars["String"]},
		Description: "The name of the current Object type at runtime."}
	schemaField = &FieldDef{Name: "__schema", Description: "Access the current type schema of this server."}
	typeField   = &FieldDef{Name: "__type", Description: "Request the type information of a single type."}
)

func init() {
	it := introspectionTypes()
	schemaField.Type = &Type{Kind: NonNull, OfType: it.types["__Schema"]}
	schemaField.resolve = func(p ResolveParams) (any, error) { return p.Info.Schema, nil }
	typeField.Type = it.types["__Type"]
	typeField.Args = []*InputValue{{Name: "name", Type: &Type{Kind: NonNull, OfType: builtinScalars["String"]}}}
	typeField.resolve = func(p ResolveParams) (any, error) {
		name, _ := p.Args["name"].(string)
		if t := p.Info.Schema.types[name]; t != nil {
			return t, nil
		}
		return nil, nil
	}
}

func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func optType(t *Type) any {
	if t == nil {
		return nil
	}
	return t
}

func includeDeprecated(p ResolveParams) bool {
	b, _ := p.Args["includeDeprecated"].(bool)
	return b
}

func inputValueList(vs []*InputValue, p ResolveParams) []any {
	all := includeDeprecated(p)
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		if all || !v.IsDeprecated {
			out = append(out, v)
		}
	}
	return out
}

func typeList(ts []*Type) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}

func bindIntrospection(s *Schema) {
	r := func(typ, field string, fn ResolveFunc) { s.mustField(typ, field).resolve = fn }

	r("__Schema", "description", func(p ResolveParams) (any, error) { return optString(p.Source.(*Schema).Description), nil })
	r("__Schema", "types", func(p ResolveParams) (any, error) { return typeList(p.Source.(*Schema).typeList), nil })
	r("__Schema", "queryType", func(p ResolveParams) (any, error) { return optType(p.Source.(*Schema).Query), nil })
	r("__Schema", "mutationType", func(p ResolveParams) (any, error) { return optType(p.Source.(*Schema).Mutation), nil })
	r("__Schema", "subscriptionType", func(p ResolveParams) (any, error) { return optType(p.Source.(*Schema).Subscription), nil })
	r("__Schema", "directives", func(p ResolveParams) (any, error) {
		ds := p.Source.(*Schema).dirList
		out := make([]any, len(ds))
		for i, d := range ds {
			out[i] = d
		}
		return out, nil
	})

	r("__Type", "kind", func(p ResolveParams) (any, error) { return p.Source.(*Type).Kind.String(), nil })
	r("__Type", "name", func(p ResolveParams) (any, error) { return optString(p.Source.(*Type).Name), nil })
	r("__Type", "description", func(p ResolveParams) (any, error) { return optString(p.Source.(*Type).Description), nil })
	r("__Type", "specifiedByURL", func(p ResolveParams) (any, error) { return optString(p.Source.(*Type).SpecifiedByURL), nil })
	r("__Type", "fields", func(p ResolveParams) (any, error) {
		t := p.Source.(*Type)
		if t.Kind != Object && t.Kind != Interface {
			return nil, nil
		}
		all := includeDeprecated(p)
		out := make([]any, 0, len(t.Fields))
		for _, f := range t.Fields {
			if all || !f.IsDeprecated {
				out = append(out, f)
			}
		}
		return out, nil
	})
	r("__Type", "interfaces", func(p ResolveParams) (any, error) {
		t := p.Source.(*Type)
		if t.Kind != Object && t.Kind != Interface {
			return nil, nil
		}
		return typeList(t.Interfaces), nil
	})
	r("__Type", "possibleTypes", func(p ResolveParams) (any, error) {
		t := p.Source.(*Type)
		if !t.isAbstract() {
			return nil, nil
		}
		return typeList(t.PossibleTypes), nil
	})
	r("__Type", "enumValues", func(p ResolveParams) (any, error) {
		t := p.Source.(*Type)
		if t.Kind != Enum {
			return nil, nil
		}
		all := includeDeprecated(p)
		out := make([]any, 0, len(t.EnumValues))
		for _, e := range t.EnumValues {
			if all || !e.IsDeprecated {
				out = append(out, e)
			}
		}
		return out, nil
	})
	r("__Type", "inputFields", func(p ResolveParams) (any, error) {
		t := p.Source.(*Type)
		if t.Kind != InputObject {
			return nil, nil
		}
		return inputValueList(t.InputFields, p), nil
	})
	r("__Type", "ofType", func(p ResolveParams) (any, error) { return optType(p.Source.(*Type).OfType), nil })
	r("__Type", "isOneOf", func(p ResolveParams) (any, error) {
		t := p.Source.(*Type)
		if t.Kind != InputObject {
			return nil, nil
		}
		return t.OneOf, nil
	})

	r("__Field", "name", func(p ResolveParams) (any, error) { return p.Source.(*FieldDef).Name, nil })
	r("__Field", "description", func(p ResolveParams) (any, error) { return optString(p.Source.(*FieldDef).Description), nil })
	r("__Field", "args", func(p ResolveParams) (any, error) { return inputValueList(p.Source.(*FieldDef).Args, p), nil })
	r("__Field", "type", func(p ResolveParams) (any, error) { return p.Source.(*FieldDef).Type, nil })
	r("__Field", "isDeprecated", func(p ResolveParams) (any, error) { return p.Source.(*FieldDef).IsDeprecated, nil })
	r("__Field", "deprecationReason", func(p ResolveParams) (any, error) {
		f := p.Source.(*FieldDef)
		if !f.IsDeprecated {
			return nil, nil
		}
		return f.DeprecationReason, nil
	})

	r("__InputValue", "name", func(p ResolveParams) (any, error) { return p.Source.(*InputValue).Name, nil })
	r("__InputValue", "description", func(p ResolveParams) (any, error) { return optString(p.Source.(*InputValue).Description), nil })
	r("__InputValue", "type", func(p ResolveParams) (any, error) { return p.Source.(*InputValue).Type, nil })
	r("__InputValue", "defaultValue", func(p ResolveParams) (any, error) {
		v := p.Source.(*InputValue)
		if v.DefaultValue == nil {
			return nil, nil
		}
		return printLiteral(v.DefaultValue), nil
	})
	r("__InputValue", "isDeprecated", func(p ResolveParams) (any, error) { return p.Source.(*InputValue).IsDeprecated, nil })
	r("__InputValue", "deprecationReason", func(p ResolveParams) (any, error) {
		v := p.Source.(*InputValue)
		if !v.IsDeprecated {
			return nil, nil
		}
		return v.DeprecationReason, nil
	})

	r("__EnumValue", "name", func(p ResolveParams) (any, error) { return p.Source.(*EnumValueDef).Name, nil })
	r("__EnumValue", "description", func(p ResolveParams) (any, error) { return optString(p.Source.(*EnumValueDef).Description), nil })
	r("__EnumValue", "isDeprecated", func(p ResolveParams) (any, error) { return p.Source.(*EnumValueDef).IsDeprecated, nil })
	r("__EnumValue", "deprecationReason", func(p ResolveParams) (any, error) {
		e := p.Source.(*EnumValueDef)
		if !e.IsDeprecated {
			return nil, nil
		}
		return e.DeprecationReason, nil
	})

	r("__Directive", "name", func(p ResolveParams) (any, error) { return p.Source.(*DirectiveDef).Name, nil })
	r("__Directive", "description", func(p ResolveParams) (any, error) { return optString(p.Source.(*DirectiveDef).Description), nil })
	r("__Directive", "isRepeatable", func(p ResolveParams) (any, error) { return p.Source.(*DirectiveDef).IsRepeatable, nil })
	r("__Directive", "locations", func(p ResolveParams) (any, error) {
		ls := p.Source.(*DirectiveDef).Locations
		out := make([]any, len(ls))
		for i, l := range ls {
			out[i] = l
		}
		return out, nil
	})
	r("__Directive", "args", func(p ResolveParams) (any, error) { return inputValueList(p.Source.(*DirectiveDef).Args, p), nil })
}

// printLiteral prints a literal in the canonical GraphQL form used for
// __InputValue.defaultValue, and in error messages.
func printLiteral(v *Value) string { return printValue(v, false) }

// printValue prints a literal, its object fields sorted by name if sorted.
func printValue(v *Value, sorted bool) string {
	var b strings.Builder
	writeLiteral(&b, v, sorted)
	return b.String()
}

func writeLiteral(b *strings.Builder, v *Value, sorted bool) {
	switch v.Kind {
	case StringValue:
		writeGraphQLString(b, v.Raw)
	case ListValue:
		b.WriteByte('[')
		for i, e := range v.List {
			if i > 0 {
				b.WriteString(", ")
			}
			writeLiteral(b, e, sorted)
		}
		b.WriteByte(']')
	case ObjectValue:
		fields := v.Fields
		if sorted {
			fields = slices.Clone(fields)
			slices.SortStableFunc(fields, func(a, b *ObjectField) int { return strings.Compare(a.Name, b.Name) })
		}
		b.WriteByte('{')
		for i, f := range fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			writeLiteral(b, f.Value, sorted)
		}
		b.WriteByte('}')
	case VariableValue:
		b.WriteString("$" + v.Raw)
	case NullValue:
		b.WriteString("null")
	default:
		b.WriteString(v.Raw)
	}
}

// writeGraphQLString writes s as a GraphQL string literal.
func writeGraphQLString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7F {
				b.WriteString(`\u00`)
				b.WriteString(strconv.FormatInt(int64(r)>>4&0xF, 16))
				b.WriteString(strconv.FormatInt(int64(r)&0xF, 16))
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
