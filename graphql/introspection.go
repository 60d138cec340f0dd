package graphql

import (
	"slices"
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

enum __TypeKind { SCALAR OBJECT INTERFACE UNION ENUM INPUT_OBJECT LIST NON_NULL }

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
  QUERY MUTATION SUBSCRIPTION FIELD FRAGMENT_DEFINITION FRAGMENT_SPREAD INLINE_FRAGMENT VARIABLE_DEFINITION
  SCHEMA SCALAR OBJECT FIELD_DEFINITION ARGUMENT_DEFINITION INTERFACE UNION ENUM ENUM_VALUE INPUT_OBJECT
  INPUT_FIELD_DEFINITION DIRECTIVE_DEFINITION
}
`

var (
	introspectionOnce   sync.Once
	introspectionSchema *Schema
)

// introspectionTypes returns a pseudo-schema holding the introspection types.
func introspectionTypes() *Schema {
	introspectionOnce.Do(func() {
		doc, err := parse(introspectionSDL)
		if err != nil {
			panic(err)
		}
		s := &Schema{types: map[string]*Type{}, directives: map[string]*DirectiveDef{}, fieldCosts: map[*FieldDef]fieldCost{}}
		b := &schemaBuilder{s: s}
		if err := b.build(doc, false); err != nil {
			panic(err)
		}
		for _, t := range s.typeList {
			t.builtin = true
		}
		bindIntrospection(s)
		introspectionSchema = s
	})
	return introspectionSchema
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
		return p.Info.Schema.types[name], nil // a nil *Type is null
	}
}

// resolveOn binds fn, given the source as a T, as the resolver of typ.field.
func resolveOn[T any](s *Schema, typ, field string, fn func(src T, p ResolveParams) any) {
	s.mustField(typ, field).resolve = func(p ResolveParams) (any, error) { return fn(p.Source.(T), p), nil }
}

// listed returns items as a list, without the deprecated ones unless the
// field's includeDeprecated argument is true; or null when the field does not
// apply (!applies).
func listed[T any](applies bool, items []T, p ResolveParams) any {
	if !applies {
		return nil
	}
	all, _ := p.Args["includeDeprecated"].(bool)
	out := make([]any, 0, len(items))
	for _, it := range items {
		d, canBe := any(it).(interface{ deprecated() bool })
		if all || !canBe || !d.deprecated() {
			out = append(out, it)
		}
	}
	return out
}

// The elements that can be deprecated, for listed.
func (f *FieldDef) deprecated() bool     { return f.IsDeprecated }
func (v *InputValue) deprecated() bool   { return v.IsDeprecated }
func (e *EnumValueDef) deprecated() bool { return e.IsDeprecated }

func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func reason(deprecated bool, reason string) any {
	if !deprecated {
		return nil
	}
	return reason
}

func bindIntrospection(s *Schema) {
	resolveOn(s, "__Schema", "description", func(x *Schema, _ ResolveParams) any { return optString(x.Description) })
	resolveOn(s, "__Schema", "types", func(x *Schema, p ResolveParams) any { return listed(true, x.typeList, p) })
	resolveOn(s, "__Schema", "queryType", func(x *Schema, _ ResolveParams) any { return x.Query })
	resolveOn(s, "__Schema", "mutationType", func(x *Schema, _ ResolveParams) any { return x.Mutation })
	resolveOn(s, "__Schema", "subscriptionType", func(x *Schema, _ ResolveParams) any { return x.Subscription })
	resolveOn(s, "__Schema", "directives", func(x *Schema, p ResolveParams) any { return listed(true, x.dirList, p) })

	hasFields := func(t *Type) bool { return t.Kind == Object || t.Kind == Interface }
	resolveOn(s, "__Type", "kind", func(t *Type, _ ResolveParams) any { return t.Kind.String() })
	resolveOn(s, "__Type", "name", func(t *Type, _ ResolveParams) any { return optString(t.Name) })
	resolveOn(s, "__Type", "description", func(t *Type, _ ResolveParams) any { return optString(t.Description) })
	resolveOn(s, "__Type", "specifiedByURL", func(t *Type, _ ResolveParams) any { return optString(t.SpecifiedByURL) })
	resolveOn(s, "__Type", "fields", func(t *Type, p ResolveParams) any { return listed(hasFields(t), t.Fields, p) })
	resolveOn(s, "__Type", "interfaces", func(t *Type, p ResolveParams) any { return listed(hasFields(t), t.Interfaces, p) })
	resolveOn(s, "__Type", "possibleTypes", func(t *Type, p ResolveParams) any { return listed(t.isAbstract(), t.PossibleTypes, p) })
	resolveOn(s, "__Type", "enumValues", func(t *Type, p ResolveParams) any { return listed(t.Kind == Enum, t.EnumValues, p) })
	resolveOn(s, "__Type", "inputFields", func(t *Type, p ResolveParams) any { return listed(t.Kind == InputObject, t.InputFields, p) })
	resolveOn(s, "__Type", "ofType", func(t *Type, _ ResolveParams) any { return t.OfType })
	resolveOn(s, "__Type", "isOneOf", func(t *Type, _ ResolveParams) any {
		if t.Kind != InputObject {
			return nil
		}
		return t.OneOf
	})

	resolveOn(s, "__Field", "name", func(f *FieldDef, _ ResolveParams) any { return f.Name })
	resolveOn(s, "__Field", "description", func(f *FieldDef, _ ResolveParams) any { return optString(f.Description) })
	resolveOn(s, "__Field", "args", func(f *FieldDef, p ResolveParams) any { return listed(true, f.Args, p) })
	resolveOn(s, "__Field", "type", func(f *FieldDef, _ ResolveParams) any { return f.Type })
	resolveOn(s, "__Field", "isDeprecated", func(f *FieldDef, _ ResolveParams) any { return f.IsDeprecated })
	resolveOn(s, "__Field", "deprecationReason", func(f *FieldDef, _ ResolveParams) any { return reason(f.IsDeprecated, f.DeprecationReason) })

	resolveOn(s, "__InputValue", "name", func(v *InputValue, _ ResolveParams) any { return v.Name })
	resolveOn(s, "__InputValue", "description", func(v *InputValue, _ ResolveParams) any { return optString(v.Description) })
	resolveOn(s, "__InputValue", "type", func(v *InputValue, _ ResolveParams) any { return v.Type })
	resolveOn(s, "__InputValue", "defaultValue", func(v *InputValue, _ ResolveParams) any {
		if v.DefaultValue == nil {
			return nil
		}
		return printLiteral(v.DefaultValue)
	})
	resolveOn(s, "__InputValue", "isDeprecated", func(v *InputValue, _ ResolveParams) any { return v.IsDeprecated })
	resolveOn(s, "__InputValue", "deprecationReason", func(v *InputValue, _ ResolveParams) any { return reason(v.IsDeprecated, v.DeprecationReason) })

	resolveOn(s, "__EnumValue", "name", func(e *EnumValueDef, _ ResolveParams) any { return e.Name })
	resolveOn(s, "__EnumValue", "description", func(e *EnumValueDef, _ ResolveParams) any { return optString(e.Description) })
	resolveOn(s, "__EnumValue", "isDeprecated", func(e *EnumValueDef, _ ResolveParams) any { return e.IsDeprecated })
	resolveOn(s, "__EnumValue", "deprecationReason", func(e *EnumValueDef, _ ResolveParams) any { return reason(e.IsDeprecated, e.DeprecationReason) })

	resolveOn(s, "__Directive", "name", func(d *DirectiveDef, _ ResolveParams) any { return d.Name })
	resolveOn(s, "__Directive", "description", func(d *DirectiveDef, _ ResolveParams) any { return optString(d.Description) })
	resolveOn(s, "__Directive", "isRepeatable", func(d *DirectiveDef, _ ResolveParams) any { return d.IsRepeatable })
	resolveOn(s, "__Directive", "locations", func(d *DirectiveDef, p ResolveParams) any { return listed(true, d.Locations, p) })
	resolveOn(s, "__Directive", "args", func(d *DirectiveDef, p ResolveParams) any { return listed(true, d.Args, p) })
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

func writeGraphQLString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch k := strings.IndexRune(escapedChars, r); {
		case k >= 0 && r != '/':
			b.WriteByte('\\')
			b.WriteByte(escapeLetters[k])
		case r < 0x20 || r == 0x7F:
			// By hand, not fmt.Fprintf: b would escape to the heap on every call.
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
