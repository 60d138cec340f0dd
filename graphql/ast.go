package graphql

import "cmp"

// This file holds the syntax tree the parser produces. Every node records the
// position of its first token, which is what GraphQL error locations name.

// node is what the definitions and selections share: the position of their first token.
type node struct{ Pos Position }

// Position returns the position of the node's first token.
func (n *node) Position() Position { return n.Pos }

// Document is a parsed GraphQL document: executable definitions, type-system
// definitions, or both.
type Document struct {
	Definitions []Definition
}

// Definition is one top-level definition of a Document: an
// *OperationDefinition, *FragmentDefinition, *SchemaDefinition,
// *TypeDefinition or *DirectiveDefinition.
type Definition interface {
	Position() Position
	definition()
}

// Selection is one entry of a selection set: a *Field, *FragmentSpread or
// *InlineFragment.
type Selection interface {
	Position() Position
	selection()
}

// OperationType is query, mutation or subscription.
type OperationType uint8

// The three operation types.
const (
	Query OperationType = iota
	Mutation
	Subscription
)

// String returns the operation type as the document writes it: query, mutation or subscription.
func (o OperationType) String() string { return [...]string{"query", "mutation", "subscription"}[o] }

// OperationDefinition is a query, mutation or subscription. Name is empty for
// an anonymous operation.
type OperationDefinition struct {
	node
	Operation    OperationType
	Name         string
	NamePos      Position
	Variables    []*VariableDefinition
	Directives   []*Directive
	SelectionSet *SelectionSet
}

// VariableDefinition declares $Name of Type with an optional default.
type VariableDefinition struct {
	Pos          Position // the "$"
	Name         string   // without the "$"
	NamePos      Position
	Type         *TypeRef
	DefaultValue *Value // nil when absent
	Directives   []*Directive
}

// SelectionSet is a braced list of selections.
type SelectionSet struct {
	Pos        Position
	Selections []Selection
}

// Field selects a field, optionally under an alias.
type Field struct {
	node
	Alias        string
	Name         string
	NamePos      Position
	Arguments    []*Argument
	Directives   []*Directive
	SelectionSet *SelectionSet // nil for a leaf selection
}

// responseKey is the key under which the field appears in the response.
func (f *Field) responseKey() string { return cmp.Or(f.Alias, f.Name) }

// Argument is a name: value pair of a field or directive.
type Argument struct {
	Pos   Position
	Name  string
	Value *Value
}

// FragmentSpread is ...Name.
type FragmentSpread struct {
	node
	Name       string
	NamePos    Position
	Directives []*Directive
}

// InlineFragment is ... on Type { ... }; TypeCondition is nil when omitted.
type InlineFragment struct {
	node
	TypeCondition *TypeRef
	Directives    []*Directive
	SelectionSet  *SelectionSet
}

// FragmentDefinition is fragment Name on Type { ... }.
type FragmentDefinition struct {
	node
	Name          string
	NamePos       Position
	TypeCondition *TypeRef
	Directives    []*Directive
	SelectionSet  *SelectionSet
}

// Directive is @Name(arguments).
type Directive struct {
	Pos       Position // the "@"
	Name      string
	Arguments []*Argument
}

// TypeRefKind tells a named type from a list or non-null wrapper.
type TypeRefKind uint8

// Kinds of type references.
const (
	NamedTypeRef TypeRefKind = iota
	ListTypeRef
	NonNullTypeRef
)

// TypeRef is a type as written in a document: Name, [Elem] or Elem!.
type TypeRef struct {
	Pos  Position
	Kind TypeRefKind
	Name string   // NamedTypeRef only
	Elem *TypeRef // ListTypeRef and NonNullTypeRef
}

// String returns the type reference in GraphQL syntax, e.g. [ID!]!.
func (t *TypeRef) String() string {
	switch t.Kind {
	case ListTypeRef:
		return "[" + t.Elem.String() + "]"
	case NonNullTypeRef:
		return t.Elem.String() + "!"
	}
	return t.Name
}

// ValueKind is the kind of a literal Value.
type ValueKind uint8

// Kinds of input values (spec 2.9).
const (
	VariableValue ValueKind = iota
	IntValue
	FloatValue
	StringValue
	BooleanValue
	NullValue
	EnumValue
	ListValue
	ObjectValue
)

// Value is an input value literal. Raw is the variable name (without "$")
// for variables, the source text for numbers, the decoded text for strings,
// "true" or "false" for booleans and the name for enum values.
type Value struct {
	Pos    Position
	Kind   ValueKind
	Raw    string
	List   []*Value       // ListValue
	Fields []*ObjectField // ObjectValue
}

// ObjectField is one name: value entry of an object literal.
type ObjectField struct {
	Pos   Position
	Name  string
	Value *Value
}

// SchemaDefinition is schema { query: Q ... } or its extension.
type SchemaDefinition struct {
	node
	Extend      bool
	Description string
	Directives  []*Directive
	Operations  []*RootOperationType
}

// RootOperationType names the root type of one operation type.
type RootOperationType struct {
	Pos       Position
	Operation OperationType
	Type      *TypeRef
}

// TypeDefinition is any named type definition or extension. Which fields are
// used depends on Kind.
type TypeDefinition struct {
	node
	Extend      bool
	Kind        TypeKind
	Description string
	Name        string
	NamePos     Position
	Interfaces  []*TypeRef              // Object, Interface
	Directives  []*Directive            //
	Fields      []*FieldDefinition      // Object, Interface
	InputFields []*InputValueDefinition // InputObject
	Types       []*TypeRef              // Union members
	EnumValues  []*EnumValueDefinition  // Enum
}

// FieldDefinition is a field of an object or interface type definition.
type FieldDefinition struct {
	Pos         Position
	Description string
	Name        string
	Args        []*InputValueDefinition
	Type        *TypeRef
	Directives  []*Directive
}

// InputValueDefinition is an argument or input field definition.
type InputValueDefinition struct {
	Pos          Position
	Description  string
	Name         string
	Type         *TypeRef
	DefaultValue *Value
	Directives   []*Directive
}

// EnumValueDefinition is one value of an enum type definition.
type EnumValueDefinition struct {
	Pos         Position
	Description string
	Name        string
	Directives  []*Directive
}

// DirectiveDefinition is directive @Name(args) repeatable on LOCATIONS.
type DirectiveDefinition struct {
	node
	Description string
	Name        string
	Args        []*InputValueDefinition
	Repeatable  bool
	Locations   []string
}

func (*OperationDefinition) definition() {}
func (*FragmentDefinition) definition()  {}
func (*SchemaDefinition) definition()    {}
func (*TypeDefinition) definition()      {}
func (*DirectiveDefinition) definition() {}
func (*Field) selection()                {}
func (*FragmentSpread) selection()       {}
func (*InlineFragment) selection()       {}
