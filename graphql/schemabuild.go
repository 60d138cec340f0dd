package graphql

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Building a Schema from SDL (spec 3), with the built-in scalars, directives
// and introspection types, checked as the specification's type validation asks.

// SchemaError reports a problem in an SDL document.
type SchemaError struct {
	Pos Position
	Msg string
}

// Error returns the message, with its line and column when known.
func (e *SchemaError) Error() string {
	if e.Pos.Line == 0 {
		return "schema: " + e.Msg
	}
	return fmt.Sprintf("schema: %s (line %d, column %d)", e.Msg, e.Pos.Line, e.Pos.Column)
}

// ParseSchema builds a schema from an SDL document. The built-in scalars,
// directives and introspection types are added; the root types are those of
// the schema definition, or the types named Query, Mutation and Subscription.
func ParseSchema(sdl string) (*Schema, error) {
	doc, err := parse(sdl)
	if err != nil {
		return nil, err
	}
	b := &schemaBuilder{s: &Schema{types: map[string]*Type{}, directives: map[string]*DirectiveDef{},
		fieldCosts: map[*FieldDef]fieldCost{}, Limits: DefaultLimits, cache: newLRU[string, *preparedDocument](defaultCacheBytes)}}
	if err := b.build(doc, true); err != nil {
		return nil, err
	}
	return b.s, nil
}

type schemaBuilder struct {
	s    *Schema
	defs map[string]*TypeDefinition
	err  *SchemaError
}

func (b *schemaBuilder) errorf(pos Position, format string, args ...any) {
	if b.err == nil {
		b.err = &SchemaError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
}

// build turns doc into b.s. A user schema (withIntrospection) also gets the
// built-in directives, the introspection types and root types; the
// introspection types themselves are built without those.
func (b *schemaBuilder) build(doc *Document, withIntrospection bool) error {
	s := b.s
	var schemaDefs []*SchemaDefinition
	var typeDefs, exts []*TypeDefinition
	var dirDefs []*DirectiveDefinition
	b.defs = make(map[string]*TypeDefinition)
	for _, d := range doc.Definitions {
		switch d := d.(type) {
		case *SchemaDefinition:
			schemaDefs = append(schemaDefs, d)
		case *TypeDefinition:
			if d.Extend {
				exts = append(exts, d)
				continue
			}
			if _, dup := b.defs[d.Name]; dup || builtinScalars[d.Name] != nil || (withIntrospection && strings.HasPrefix(d.Name, "__")) {
				b.errorf(d.NamePos, "there can be only one type named %q", d.Name)
				continue
			}
			b.defs[d.Name] = d
			typeDefs = append(typeDefs, d)
		case *DirectiveDefinition:
			dirDefs = append(dirDefs, d)
		default:
			b.errorf(d.Position(), "executable definitions are not allowed in a schema")
		}
	}
	if b.err != nil {
		return b.err
	}
	// Named types first, so that references can be resolved in any order.
	for _, d := range typeDefs {
		t := &Type{Kind: d.Kind, Name: d.Name, Description: d.Description}
		s.types[d.Name] = t
		s.typeList = append(s.typeList, t)
	}
	for _, e := range exts {
		d := b.defs[e.Name]
		if d == nil || d.Kind != e.Kind {
			b.errorf(e.NamePos, "cannot extend type %q: no %s of that name is defined", e.Name, strings.ToLower(e.Kind.String()))
			continue
		}
		d.Interfaces = append(d.Interfaces, e.Interfaces...)
		d.Directives = append(d.Directives, e.Directives...)
		d.Fields = append(d.Fields, e.Fields...)
		d.InputFields = append(d.InputFields, e.InputFields...)
		d.Types = append(d.Types, e.Types...)
		d.EnumValues = append(d.EnumValues, e.EnumValues...)
	}
	if withIntrospection {
		for _, d := range builtinDirectives() {
			b.addDirective(d)
		}
	}
	for _, d := range dirDefs {
		if s.directives[d.Name] != nil {
			b.errorf(d.Pos, "there can be only one directive named \"@%s\"", d.Name)
			continue
		}
		b.addDirective(d)
	}
	for _, d := range typeDefs {
		b.complete(s.types[d.Name], d)
	}
	if withIntrospection {
		for _, t := range introspectionTypes().typeList {
			s.types[t.Name] = t
			s.typeList = append(s.typeList, t)
		}
		b.roots(schemaDefs)
	}
	if b.err != nil {
		return b.err
	}
	b.check()
	if b.err != nil {
		return b.err
	}
	if withIntrospection {
		b.addUsedBuiltins()
		s.sizeIntrospection()
	}
	return nil
}

func (b *schemaBuilder) addDirective(d *DirectiveDefinition) {
	dd := &DirectiveDef{Name: d.Name, Description: d.Description, Args: b.inputValues(d.Args), IsRepeatable: d.Repeatable, Locations: d.Locations}
	b.s.directives[d.Name] = dd
	b.s.dirList = append(b.s.dirList, dd)
}

// typeOf resolves a type reference. Built-in scalars resolve to shared
// singletons, which are added to the schema later when something uses them.
func (b *schemaBuilder) typeOf(r *TypeRef) *Type {
	if r.Kind != NamedTypeRef {
		return &Type{Kind: wrapperKinds[r.Kind], OfType: b.typeOf(r.Elem)}
	}
	if t := b.s.types[r.Name]; t != nil {
		return t
	}
	if t := builtinScalars[r.Name]; t != nil {
		return t
	}
	b.errorf(r.Pos, "unknown type %q", r.Name)
	return &Type{Kind: Scalar, Name: r.Name}
}

func (b *schemaBuilder) inputValues(defs []*InputValueDefinition) []*InputValue {
	var out []*InputValue
	seen := make(map[string]bool, len(defs))
	for _, d := range defs {
		if seen[d.Name] {
			b.errorf(d.Pos, "duplicate argument or input field %q", d.Name)
		}
		seen[d.Name] = true
		v := &InputValue{Name: d.Name, Description: d.Description, Type: b.typeOf(d.Type), DefaultValue: d.DefaultValue}
		if !v.Type.isInput() {
			b.errorf(d.Type.Pos, "%q must be an input type, but %s is not", d.Name, v.Type)
		}
		v.IsDeprecated, v.DeprecationReason = deprecation(d.Directives)
		out = append(out, v)
	}
	return out
}

// deprecation reads @deprecated(reason:) from directives.
func deprecation(ds []*Directive) (bool, string) {
	for _, d := range ds {
		if d.Name != "deprecated" {
			continue
		}
		for _, a := range d.Arguments {
			if a.Name == "reason" && a.Value.Kind == StringValue {
				return true, a.Value.Raw
			}
		}
		return true, "No longer supported"
	}
	return false, ""
}

func (b *schemaBuilder) complete(t *Type, d *TypeDefinition) {
	for _, dir := range d.Directives {
		switch dir.Name {
		case "specifiedBy":
			for _, a := range dir.Arguments {
				if a.Name == "url" {
					t.SpecifiedByURL = a.Value.Raw
				}
			}
		case "oneOf":
			t.OneOf = true
		}
	}
	switch t.Kind {
	case Object, Interface:
		t.fieldMap = make(map[string]*FieldDef, len(d.Fields))
		for _, fd := range d.Fields {
			if t.fieldMap[fd.Name] != nil {
				b.errorf(fd.Pos, "field %s.%s is defined more than once", t.Name, fd.Name)
				continue
			}
			if strings.HasPrefix(fd.Name, "__") {
				b.errorf(fd.Pos, "field name %q must not begin with \"__\"", fd.Name)
			}
			f := &FieldDef{Name: fd.Name, Description: fd.Description, Type: b.typeOf(fd.Type)}
			if !f.Type.isOutput() {
				b.errorf(fd.Type.Pos, "field %s.%s must be of an output type, but %s is not", t.Name, fd.Name, f.Type)
			}
			f.Args = b.inputValues(fd.Args)
			f.IsDeprecated, f.DeprecationReason = deprecation(fd.Directives)
			b.readCostDirectives(t, f, fd)
			t.Fields = append(t.Fields, f)
			t.fieldMap[fd.Name] = f
		}
		for _, r := range d.Interfaces {
			it := b.typeOf(r)
			if it.Kind != Interface {
				b.errorf(r.Pos, "type %s can only implement interfaces, and %s is not one", t.Name, r.Name)
				continue
			}
			t.Interfaces = append(t.Interfaces, it)
		}
	case Union:
		t.possible = make(map[*Type]bool)
		for _, r := range d.Types {
			m := b.typeOf(r)
			if m.Kind != Object {
				b.errorf(r.Pos, "union %s can only include object types, and %s is not one", t.Name, r.Name)
				continue
			}
			if !t.possible[m] {
				t.possible[m] = true
				t.PossibleTypes = append(t.PossibleTypes, m)
			}
		}
	case Enum:
		t.enumMap = make(map[string]*EnumValueDef, len(d.EnumValues))
		for _, ed := range d.EnumValues {
			if t.enumMap[ed.Name] != nil {
				b.errorf(ed.Pos, "enum value %s.%s is defined more than once", t.Name, ed.Name)
			}
			e := &EnumValueDef{Name: ed.Name, Description: ed.Description}
			e.IsDeprecated, e.DeprecationReason = deprecation(ed.Directives)
			t.EnumValues = append(t.EnumValues, e)
			t.enumMap[ed.Name] = e
		}
	case InputObject:
		t.InputFields = b.inputValues(d.InputFields)
		t.inputFieldMap = make(map[string]*InputValue, len(t.InputFields))
		for _, f := range t.InputFields {
			t.inputFieldMap[f.Name] = f
		}
	}
	if t.Kind != Scalar && len(t.Fields)+len(t.PossibleTypes)+len(t.EnumValues)+len(t.InputFields) == 0 {
		b.errorf(d.NamePos, emptyTypeErrors[t.Kind], t.Name)
	}
}

var emptyTypeErrors = [...]string{
	Object: "type %s must define one or more fields", Interface: "type %s must define one or more fields",
	Union: "union %s must have one or more member types", Enum: "enum %s must define one or more values",
	InputObject: "input %s must define one or more fields",
}

func (b *schemaBuilder) roots(defs []*SchemaDefinition) {
	s := b.s
	if len(defs) == 0 {
		s.Query = s.types["Query"]
		s.Mutation = s.types["Mutation"]
		s.Subscription = s.types["Subscription"]
	}
	root := [...]**Type{Query: &s.Query, Mutation: &s.Mutation, Subscription: &s.Subscription}
	for _, d := range defs {
		if !d.Extend {
			s.Description = d.Description
		}
		for _, r := range d.Operations {
			t := s.types[r.Type.Name]
			if t == nil || t.Kind != Object {
				b.errorf(r.Type.Pos, "root %s type %q must be a defined object type", r.Operation, r.Type.Name)
				continue
			}
			*root[r.Operation] = t
		}
	}
	if s.Query == nil {
		b.errorf(Position{}, "the schema has no query root type")
	} else if s.Query.Kind != Object {
		b.errorf(Position{}, "the query root type must be an object type")
	}
	for _, t := range []*Type{s.Mutation, s.Subscription} {
		if t != nil && t.Kind != Object {
			b.errorf(Position{}, "root type %s must be an object type", t.Name)
		}
	}
}

// check verifies that objects and interfaces really implement their
// interfaces (spec 3.6.1 IsValidImplementation, the parts that matter for
// execution) and records possible types of interfaces.
func (b *schemaBuilder) check() {
	for _, t := range b.s.typeList {
		for _, it := range t.Interfaces {
			for _, f := range it.Fields {
				g := t.fieldMap[f.Name]
				if g == nil {
					b.errorf(b.defs[t.Name].NamePos, "%s.%s expected by interface %s is not provided", t.Name, f.Name, it.Name)
					continue
				}
				if !isSubType(g.Type, f.Type) {
					b.errorf(b.defs[t.Name].NamePos, "%s.%s of type %s does not match interface %s.%s of type %s", t.Name, f.Name, g.Type, it.Name, f.Name, f.Type)
				}
				for _, a := range f.Args {
					if ga := g.Arg(a.Name); ga == nil || !sameType(ga.Type, a.Type) {
						b.errorf(b.defs[t.Name].NamePos, "%s.%s must take argument %s of type %s as interface %s does", t.Name, f.Name, a.Name, a.Type, it.Name)
					}
				}
			}
			if t.Kind == Object {
				if it.possible == nil {
					it.possible = make(map[*Type]bool)
				}
				if !it.possible[t] {
					it.possible[t] = true
					it.PossibleTypes = append(it.PossibleTypes, t)
				}
			}
		}
	}
}

// addUsedBuiltins adds the built-in scalars that the schema refers to.
// String and Boolean are always used by introspection.
func (b *schemaBuilder) addUsedBuiltins() {
	used := map[*Type]bool{}
	b.s.eachTypeRef(func(t *Type) {
		if t = t.Named(); t.builtin {
			used[t] = true
		}
	})
	for _, name := range []string{"Int", "Float", "String", "Boolean", "ID"} {
		if t := builtinScalars[name]; used[t] {
			b.s.types[name] = t
			b.s.typeList = append(b.s.typeList, t)
		}
	}
}

// eachTypeRef calls fn with the type of every field, argument and input field of s.
func (s *Schema) eachTypeRef(fn func(t *Type)) {
	for _, t := range s.typeList {
		for _, f := range t.Fields {
			fn(f.Type)
			for _, a := range f.Args {
				fn(a.Type)
			}
		}
		for _, f := range t.InputFields {
			fn(f.Type)
		}
	}
	for _, d := range s.dirList {
		for _, a := range d.Args {
			fn(a.Type)
		}
	}
}

func sameType(a, b *Type) bool {
	for a.Kind == b.Kind && (a.Kind == List || a.Kind == NonNull) {
		a, b = a.OfType, b.OfType
	}
	return a == b
}

// isSubType reports whether a value of type sub can be used where super is
// expected (covariant output types, spec 3.6.1 IsValidImplementationFieldType).
func isSubType(sub, super *Type) bool {
	switch {
	case sameType(sub, super):
		return true
	case super.Kind == NonNull:
		return sub.Kind == NonNull && isSubType(sub.OfType, super.OfType)
	case sub.Kind == NonNull:
		return isSubType(sub.OfType, super)
	case super.Kind == List || sub.Kind == List:
		return sub.Kind == super.Kind && isSubType(sub.OfType, super.OfType)
	}
	return super.isAbstract() && super.isPossibleType(sub) || (super.Kind == Interface && implements(sub, super))
}

func implements(t, it *Type) bool { return slices.Contains(t.Interfaces, it) }

var directiveLocations = map[string]bool{
	"QUERY": true, "MUTATION": true, "SUBSCRIPTION": true, "FIELD": true,
	"FRAGMENT_DEFINITION": true, "FRAGMENT_SPREAD": true, "INLINE_FRAGMENT": true,
	"VARIABLE_DEFINITION": true, "SCHEMA": true, "SCALAR": true, "OBJECT": true,
	"FIELD_DEFINITION": true, "ARGUMENT_DEFINITION": true, "INTERFACE": true,
	"UNION": true, "ENUM": true, "ENUM_VALUE": true, "INPUT_OBJECT": true,
	"INPUT_FIELD_DEFINITION": true, "DIRECTIVE_DEFINITION": true,
}

// builtinDirectivesSDL declares the built-in directives exactly as graphql-js
// 16.15's specifiedDirectives (TestBuiltinDirectivesMatchGraphQLJS).
const builtinDirectivesSDL = `
"Directs the executor to include this field or fragment only when the ` + "`if`" + ` argument is true."
directive @include("Included when true." if: Boolean!) on FIELD | FRAGMENT_SPREAD | INLINE_FRAGMENT

"Directs the executor to skip this field or fragment when the ` + "`if`" + ` argument is true."
directive @skip("Skipped when true." if: Boolean!) on FIELD | FRAGMENT_SPREAD | INLINE_FRAGMENT

"Marks an element of a GraphQL schema as no longer supported."
directive @deprecated(
  "Explains why this element was deprecated, usually also including a suggestion for how to access supported similar data. Formatted using the Markdown syntax, as specified by [CommonMark](https://commonmark.org/)."
  reason: String = "No longer supported"
) on FIELD_DEFINITION | ARGUMENT_DEFINITION | INPUT_FIELD_DEFINITION | ENUM_VALUE | DIRECTIVE_DEFINITION

"Exposes a URL that specifies the behavior of this scalar."
directive @specifiedBy("The URL that specifies the behavior of this scalar." url: String!) on SCALAR

"Indicates exactly one field must be supplied and this field must not be ` + "`null`" + `."
directive @oneOf on INPUT_OBJECT
`

var builtinDirectives = sync.OnceValue(func() []*DirectiveDefinition {
	doc, err := parse(builtinDirectivesSDL)
	if err != nil {
		panic(err)
	}
	var out []*DirectiveDefinition
	for _, d := range doc.Definitions {
		out = append(out, d.(*DirectiveDefinition))
	}
	return out
})

// builtinScalars are shared by every schema; they are never modified.
var builtinScalars = map[string]*Type{
	"Int":     {Kind: Scalar, Name: "Int", builtin: true, Description: "The `Int` scalar type represents non-fractional signed whole numeric values. Int can represent values between -(2^31) and 2^31 - 1."},
	"Float":   {Kind: Scalar, Name: "Float", builtin: true, Description: "The `Float` scalar type represents signed double-precision fractional values as specified by [IEEE 754](https://en.wikipedia.org/wiki/IEEE_floating_point)."},
	"String":  {Kind: Scalar, Name: "String", builtin: true, Description: "The `String` scalar type represents textual data, represented as UTF-8 character sequences. The String type is most often used by GraphQL to represent free-form human-readable text."},
	"Boolean": {Kind: Scalar, Name: "Boolean", builtin: true, Description: "The `Boolean` scalar type represents `true` or `false`."},
	"ID":      {Kind: Scalar, Name: "ID", builtin: true, Description: "The `ID` scalar type represents a unique identifier, often used to refetch an object or as key for a cache. The ID type appears in a JSON response as a String; however, it is not intended to be human-readable. When expected as an input type, any string (such as `\"4\"`) or integer (such as `4`) input value will be accepted as an ID."},
}
