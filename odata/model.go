package odata

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// EdmType is the primitive type of a structural property.
type EdmType int

// The Edm primitive types a Property may have.
const (
	EdmInt32 EdmType = iota + 1
	EdmInt64
	EdmDecimal
	EdmString
	EdmBoolean
	EdmDateTimeOffset
)

// edmTypes gives each EdmType its CSDL name, its expression type and the
// annotation full metadata adds when JSON does not tell the type (JSON Format 4.5.3).
var edmTypes = [...]struct {
	name       string
	typ        Type
	annotation string
}{
	EdmInt32:          {"Edm.Int32", TypeInt, ""},
	EdmInt64:          {"Edm.Int64", TypeInt, "#Int64"},
	EdmDecimal:        {"Edm.Decimal", TypeDecimal, "#Decimal"},
	EdmString:         {"Edm.String", TypeString, ""},
	EdmBoolean:        {"Edm.Boolean", TypeBool, ""},
	EdmDateTimeOffset: {"Edm.DateTimeOffset", TypeDateTimeOffset, "#DateTimeOffset"},
}

// String returns the qualified CSDL name, e.g. "Edm.Int32".
func (t EdmType) String() string {
	if t > 0 && int(t) < len(edmTypes) {
		return edmTypes[t].name
	}
	return fmt.Sprintf("EdmType(%d)", int(t))
}

// decimalScale is the units per 1 of a decimal, carried as an int64: 19.99 is 199900.
const decimalScale = 10000

// Property is a structural property of an entity type. The getter matching Type
// must be set (Int for Int32 and Int64, Decimal in units of 1/decimalScale); it
// receives the entity value as stored by the caller.
type Property struct {
	Name        string // JSON name, e.g. "createdDate"
	Type        EdmType
	Nullable    bool   // only reported in $metadata; getters cannot return null
	Description string // Core.Description in $metadata, if set

	Int     func(any) int64
	Decimal func(any) int64
	String  func(any) string
	Bool    func(any) bool
	Time    func(any) time.Time
}

// NavProperty is a navigation property: a collection sets Many, a single-valued
// one sets One, which reports false when there is no related entity.
type NavProperty struct {
	Name       string // JSON name, e.g. "orders"
	Target     *EntityType
	Collection bool
	Partner    string // name of the inverse navigation on Target, if any

	Many func(any) []any
	One  func(any) (any, bool)
}

// EntityType describes one kind of entity; Properties are written in their order.
type EntityType struct {
	Name        string // unqualified, e.g. "Product"
	Description string // Core.Description in $metadata, if set
	Key         string // name of the key property; it must be an integer property
	Properties  []*Property
	Navigation  []*NavProperty

	props map[string]*Property // by lower-cased name
	navs  map[string]*NavProperty

	namespace string     // the model's, for @odata.type
	set       *EntitySet // the first set of this type, for @odata.id; nil if none
}

// Property returns the structural property named name, in any letter case.
func (t *EntityType) Property(name string) *Property { return t.props[strings.ToLower(name)] }

func (t *EntityType) nav(name string) *NavProperty { return t.navs[strings.ToLower(name)] }

func (t *EntityType) keyProperty() *Property { return t.Property(t.Key) }

// EntitySet is a named, addressable collection of entities of one type.
type EntitySet struct {
	Name        string // e.g. "Products"; URL segments match it case-insensitively
	Type        *EntityType
	Description string // Core.Description in $metadata, if set
}

// Model is the entity types and sets of one CSDL namespace, built by NewModel.
type Model struct {
	Namespace string
	Container string
	Types     []*EntityType
	Sets      []*EntitySet
}

// NewModel validates and indexes the entity sets and every type reachable from
// them by navigation, reporting the first inconsistency.
func NewModel(namespace string, sets ...*EntitySet) (*Model, error) {
	m := &Model{Namespace: namespace, Container: "Container", Sets: sets}
	seen := map[*EntityType]bool{}
	var visit func(t *EntityType) error
	visit = func(t *EntityType) error {
		if seen[t] {
			return nil
		}
		seen[t] = true
		if err := t.init(); err != nil {
			return err
		}
		m.Types = append(m.Types, t)
		for _, n := range t.Navigation {
			if err := visit(n.Target); err != nil {
				return err
			}
		}
		return nil
	}
	names := map[string]bool{}
	for _, s := range sets {
		if s == nil || s.Type == nil || s.Name == "" {
			return nil, fmt.Errorf("odata: entity set without name or type")
		}
		if names[strings.ToLower(s.Name)] {
			return nil, fmt.Errorf("odata: duplicate entity set %s", s.Name)
		}
		names[strings.ToLower(s.Name)] = true
		if err := visit(s.Type); err != nil {
			return nil, err
		}
	}
	for _, t := range m.Types {
		t.namespace, t.set = namespace, m.setOf(t)
		for _, n := range t.Navigation {
			if n.Partner != "" && n.Target.nav(n.Partner) == nil {
				return nil, fmt.Errorf("odata: %s.%s: partner %s not found on %s", t.Name, n.Name, n.Partner, n.Target.Name)
			}
		}
	}
	return m, nil
}

// setOf returns the first entity set whose type is t, or nil.
func (m *Model) setOf(t *EntityType) *EntitySet {
	return m.firstSet(func(s *EntitySet) bool { return s.Type == t })
}

// Set returns the entity set named name (case-insensitively), or nil.
func (m *Model) Set(name string) *EntitySet {
	return m.firstSet(func(s *EntitySet) bool { return strings.EqualFold(s.Name, name) })
}

func (m *Model) firstSet(is func(*EntitySet) bool) *EntitySet {
	if i := slices.IndexFunc(m.Sets, is); i >= 0 {
		return m.Sets[i]
	}
	return nil
}

func (t *EntityType) init() error {
	if t.Name == "" {
		return fmt.Errorf("odata: entity type without name")
	}
	t.props = map[string]*Property{}
	t.navs = map[string]*NavProperty{}
	for _, p := range t.Properties {
		if p == nil || p.Name == "" {
			return fmt.Errorf("odata: %s: property without name", t.Name)
		}
		k := strings.ToLower(p.Name)
		if t.props[k] != nil {
			return fmt.Errorf("odata: %s: duplicate property %s", t.Name, p.Name)
		}
		if err := p.check(); err != nil {
			return fmt.Errorf("odata: %s.%s: %v", t.Name, p.Name, err)
		}
		t.props[k] = p
	}
	for _, n := range t.Navigation {
		if n == nil || n.Name == "" || n.Target == nil {
			return fmt.Errorf("odata: %s: navigation property without name or target", t.Name)
		}
		k := strings.ToLower(n.Name)
		if t.props[k] != nil || t.navs[k] != nil {
			return fmt.Errorf("odata: %s: duplicate property %s", t.Name, n.Name)
		}
		if n.Collection && n.Many == nil || !n.Collection && n.One == nil {
			return fmt.Errorf("odata: %s.%s: missing getter", t.Name, n.Name)
		}
		t.navs[k] = n
	}
	key := t.Property(t.Key)
	if key == nil || key.Type != EdmInt32 && key.Type != EdmInt64 {
		return fmt.Errorf("odata: %s: key %q is not an integer property", t.Name, t.Key)
	}
	return nil
}

func (p *Property) check() error {
	hasGetter, known := map[EdmType]bool{
		EdmInt32: p.Int != nil, EdmInt64: p.Int != nil, EdmDecimal: p.Decimal != nil,
		EdmString: p.String != nil, EdmBoolean: p.Bool != nil, EdmDateTimeOffset: p.Time != nil,
	}[p.Type]
	switch {
	case !known:
		return fmt.Errorf("unknown type %v", p.Type)
	case !hasGetter:
		return fmt.Errorf("missing getter for %v", p.Type)
	}
	return nil
}
