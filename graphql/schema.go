package graphql

import "fmt"

// TypeKind is the kind of a schema type, as __TypeKind names it.
type TypeKind uint8

// The kinds of types (spec section 4.5.2).
const (
	Scalar TypeKind = iota
	Object
	Interface
	Union
	Enum
	InputObject
	List
	NonNull
)

// String returns the kind as __TypeKind names it, e.g. INPUT_OBJECT.
func (k TypeKind) String() string {
	return [...]string{"SCALAR", "OBJECT", "INTERFACE", "UNION", "ENUM", "INPUT_OBJECT", "LIST", "NON_NULL"}[k]
}

// Type is a schema type. Named types have a Name; List and NonNull types
// wrap OfType. Which other fields are set depends on Kind.
type Type struct {
	Kind           TypeKind
	Name           string
	Description    string
	OfType         *Type           // List, NonNull
	Fields         []*FieldDef     // Object, Interface
	Interfaces     []*Type         // Object, Interface
	PossibleTypes  []*Type         // Union members; objects implementing an Interface
	EnumValues     []*EnumValueDef // Enum
	InputFields    []*InputValue   // InputObject
	SpecifiedByURL string          // Scalar
	OneOf          bool            // InputObject marked @oneOf

	fieldMap      map[string]*FieldDef
	inputFieldMap map[string]*InputValue
	enumMap       map[string]*EnumValueDef
	possible      map[*Type]bool
	scalar        ScalarFuncs
	builtin       bool
}

// String returns the type as written in GraphQL, e.g. "[User!]!".
func (t *Type) String() string {
	switch t.Kind {
	case List:
		return "[" + t.OfType.String() + "]"
	case NonNull:
		return t.OfType.String() + "!"
	}
	return t.Name
}

// Field returns the field called name of an object or interface type, or nil.
func (t *Type) Field(name string) *FieldDef { return t.fieldMap[name] }

// Named returns the named type inside any List and NonNull wrappers (nil for nil).
func (t *Type) Named() *Type {
	for t != nil && t.OfType != nil {
		t = t.OfType
	}
	return t
}

// Nullable strips one NonNull wrapper.
func (t *Type) Nullable() *Type {
	if t.Kind == NonNull {
		return t.OfType
	}
	return t
}

// isInput reports whether t may be the type of an argument or variable.
func (t *Type) isInput() bool {
	k := t.Named().Kind
	return k == Scalar || k == Enum || k == InputObject
}

// isOutput reports whether t may be the type of a field.
func (t *Type) isOutput() bool { return t.Named().Kind != InputObject }

func (t *Type) isLeaf() bool { return t.Kind == Scalar || t.Kind == Enum }

func (t *Type) isComposite() bool { return t.Kind == Object || t.Kind == Interface || t.Kind == Union }

func (t *Type) isAbstract() bool { return t.Kind == Interface || t.Kind == Union }

// isPossibleType reports whether object type o may be the runtime type of a
// value of abstract type t.
func (t *Type) isPossibleType(o *Type) bool { return t == o || t.possible[o] }

// FieldDef is a field of an object or interface type.
type FieldDef struct {
	Name              string
	Description       string
	Args              []*InputValue
	Type              *Type
	IsDeprecated      bool
	DeprecationReason string

	resolve   ResolveFunc
	subscribe NotifyingSubscribeFunc
}

// Arg returns the argument called name, or nil.
func (f *FieldDef) Arg(name string) *InputValue { return findInputValue(f.Args, name) }

// InputValue is an argument or an input object field.
type InputValue struct {
	Name              string
	Description       string
	Type              *Type
	DefaultValue      *Value // literal default; nil when there is none
	IsDeprecated      bool
	DeprecationReason string
}

func findInputValue(list []*InputValue, name string) *InputValue {
	for _, v := range list {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// EnumValueDef is one value of an enum type.
type EnumValueDef struct {
	Name              string
	Description       string
	IsDeprecated      bool
	DeprecationReason string
}

// DirectiveDef is a directive the schema knows.
type DirectiveDef struct {
	Name         string
	Description  string
	Args         []*InputValue
	Locations    []string
	IsRepeatable bool
}

// Arg returns the argument called name, or nil.
func (d *DirectiveDef) Arg(name string) *InputValue { return findInputValue(d.Args, name) }

// ResolveFunc computes the value of a field. Its result is completed according
// to the field's type: objects are map[string]any (read by the default
// resolver) or anything the type's own field resolvers understand, lists are
// slices, leaves are Go values the scalar accepts.
type ResolveFunc func(p ResolveParams) (any, error)

// NotifyingSubscribeFunc creates the source stream of a subscription root
// field: a queue that calls notify after each event it queues and after it
// ends; notify never blocks. The engine reads the queue when told, rather than
// keeping a goroutine waiting on each: an event for a thousand subscribers over
// WebSocket wakes their sockets, not a thousand goroutines. The stream must end
// when p.Context ends. Each event is executed against the selection set.
type NotifyingSubscribeFunc func(p ResolveParams, notify func()) (EventQueue, error)

// EventQueue is a notifying source stream (NotifyingSubscribeFunc), read as
// its notify says events have come. Unlike a channel, a queue need hold no
// room for events before they come: a server with thousands of subscribers
// holds thousands of queues, most of them empty.
type EventQueue interface {
	// Next returns the oldest event not yet read, and ok true. When none is
	// waiting it returns ok false, and ended true if none will come.
	Next() (event any, ok, ended bool)
}

// ScalarFuncs customise a scalar. Serialize turns a resolver's value into
// something the JSON writer understands (string, bool, numbers, nil, []any,
// map[string]any, or a json.Marshaler). ParseValue coerces a variable value
// decoded from JSON; ParseLiteral coerces a literal written in the document.
// A nil ParseLiteral converts the literal to its JSON-like form and calls
// ParseValue. A nil function accepts its input unchanged.
type ScalarFuncs struct {
	Serialize    func(value any) (any, error)
	ParseValue   func(value any) (any, error)
	ParseLiteral func(value *Value) (any, error)
}

// Schema is an executable GraphQL schema. Build it with ParseSchema, bind
// functions with the Set methods, then use it from any number of goroutines.
// The Set methods must not be called once the schema serves requests.
type Schema struct {
	Description  string
	Query        *Type
	Mutation     *Type
	Subscription *Type

	// Limits applied to every operation before it runs. Set them before
	// the schema serves requests: checked documents are cached.
	Limits Limits

	// OnPanic, when set, is called with the value of every recovered
	// resolver panic; the panic becomes an "internal server error".
	OnPanic PanicHook

	// ShareEventResults lets the subscribers of one subscription (same query,
	// operation and variables) share one execution, and its JSON, per event.
	// Set it only when the resolvers under Subscription do not depend on the
	// request's context: every subscriber gets the first one's result. Events
	// are told apart with ==, so send a fresh value (a pointer) per event.
	// Shared responses are read-only.
	ShareEventResults bool

	types      map[string]*Type
	typeList   []*Type
	directives map[string]*DirectiveDef
	dirList    []*DirectiveDef

	cache       *lru[string, *preparedDocument]
	fieldCosts  map[*FieldDef]fieldCost // from @cost and @listSize; see cost.go
	maxWrapping int                     // the most List and NonNull wrappers of a type; see cost.go
	fanout      fanout                  // see ShareEventResults
}

// Type returns the named type called name, or nil.
func (s *Schema) Type(name string) *Type { return s.types[name] }

// Types returns every named type of the schema, introspection types included.
func (s *Schema) Types() []*Type { return s.typeList }

func (s *Schema) rootType(op OperationType) *Type {
	return [...]*Type{Query: s.Query, Mutation: s.Mutation, Subscription: s.Subscription}[op]
}

func (s *Schema) mustField(typeName, fieldName string) *FieldDef {
	t := s.types[typeName]
	if t == nil || (t.Kind != Object && t.Kind != Interface) {
		panic(fmt.Sprintf("graphql: no object type %q in schema", typeName))
	}
	f := t.fieldMap[fieldName]
	if f == nil {
		panic(fmt.Sprintf("graphql: type %s has no field %q", typeName, fieldName))
	}
	return f
}

// SetResolver binds fn to typeName.fieldName. It panics when the schema has
// no such field, so wiring mistakes show at start-up.
func (s *Schema) SetResolver(typeName, fieldName string, fn ResolveFunc) {
	s.mustField(typeName, fieldName).resolve = fn
}

// SetNotifyingSubscriber binds fn as the source stream of subscription root
// field fieldName. Each event becomes the source of the field's resolver; when
// the field has no resolver the event itself is the field's value.
func (s *Schema) SetNotifyingSubscriber(fieldName string, fn NotifyingSubscribeFunc) {
	if s.Subscription == nil {
		panic("graphql: schema has no subscription type")
	}
	s.mustField(s.Subscription.Name, fieldName).subscribe = fn
}

// SetScalar binds the functions of the custom scalar name.
func (s *Schema) SetScalar(name string, f ScalarFuncs) {
	t := s.types[name]
	if t == nil || t.Kind != Scalar || t.builtin {
		panic(fmt.Sprintf("graphql: no custom scalar %q in schema", name))
	}
	t.scalar = f
}
