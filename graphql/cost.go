package graphql

import (
	"fmt"
	"math"
	"strconv"
)

// Static cost analysis, after the IBM GraphQL Cost Directives: before any
// resolver runs, an operation's estimated cost is checked against Limits.MaxCost.
// A field costs its weight (1, or @cost(weight: N)); a list field multiplies the
// cost under it by the largest slicing argument the query gives, else its
// @listSize(assumedSize: N), else defaultListSize. Without
// @listSize(slicingArguments:), arguments named "first" or "limit" slice.
// Introspection lists are sized from the schema, and ofType chains charged no
// deeper than its deepest wrapping, so that introspection costs what it returns.

// Values of extensions.code for the refusals of Limits.MaxCost and MaxResponseBytes.
const (
	CodeCostLimitExceeded = "COST_LIMIT_EXCEEDED"
	CodeResponseTooLarge  = "RESPONSE_TOO_LARGE"
)

const defaultListSize = 50

type fieldCost struct {
	weight      int
	assumedSize int
	slicing     []string // argument names whose value is the list's size
}

var defaultFieldCost = fieldCost{weight: 1, assumedSize: defaultListSize, slicing: []string{"first", "limit"}}

func (s *Schema) costOf(def *FieldDef) fieldCost {
	if c, ok := s.fieldCosts[def]; ok {
		return c
	}
	return defaultFieldCost
}

// readCostDirectives records @cost and @listSize of fd, built as f on type t.
func (b *schemaBuilder) readCostDirectives(t *Type, f *FieldDef, fd *FieldDefinition) {
	c, found := defaultFieldCost, false
	for _, d := range fd.Directives {
		switch d.Name {
		case "cost":
			found, c.weight = true, -1
			for _, a := range d.Arguments {
				if a.Name == "weight" {
					c.weight = b.costInt(a, t, f)
				}
			}
			if c.weight < 0 {
				b.errorf(d.Pos, "@cost on %s.%s needs weight: a non-negative Int", t.Name, f.Name)
			}
		case "listSize":
			found = true
			for _, a := range d.Arguments {
				switch a.Name {
				case "assumedSize":
					c.assumedSize = b.costInt(a, t, f)
				case "slicingArguments":
					c.slicing = b.slicingArguments(a, t, f)
				default:
					b.errorf(a.Pos, "@listSize on %s.%s: argument %q is not supported (only assumedSize and slicingArguments)", t.Name, f.Name, a.Name)
				}
			}
		}
	}
	if found {
		b.s.fieldCosts[f] = c
	}
}

func (b *schemaBuilder) costInt(a *Argument, t *Type, f *FieldDef) int {
	n, err := strconv.ParseInt(a.Value.Raw, 10, 32)
	if a.Value.Kind != IntValue || err != nil || n < 0 {
		b.errorf(a.Pos, "%s of a cost directive on %s.%s must be a non-negative Int", a.Name, t.Name, f.Name)
		return 0
	}
	return int(n)
}

// slicingArguments reads @listSize(slicingArguments:): Int arguments of f, in a
// list or a single name.
func (b *schemaBuilder) slicingArguments(a *Argument, t *Type, f *FieldDef) []string {
	items := a.Value.List
	if a.Value.Kind == StringValue {
		items = []*Value{a.Value}
	} else if a.Value.Kind != ListValue {
		b.errorf(a.Pos, "slicingArguments on %s.%s must be a list of argument names", t.Name, f.Name)
		return nil
	}
	names := make([]string, 0, len(items))
	for _, v := range items {
		arg := f.Arg(v.Raw)
		if v.Kind != StringValue || arg == nil || arg.Type.Nullable().Kind != Scalar || arg.Type.Named().Name != "Int" {
			b.errorf(v.Pos, "slicing argument %q of %s.%s must name one of its Int arguments", v.Raw, t.Name, f.Name)
			continue
		}
		names = append(names, v.Raw)
	}
	return names
}

// sizeIntrospection assumes each introspection list as long as the schema's
// mean: a type's fields, say, as its fields over its types.
func (s *Schema) sizeIntrospection() {
	var fields, args, interfaces, possible, enumValues, inputFields, dirArgs int
	for _, t := range s.typeList {
		fields += len(t.Fields)
		interfaces += len(t.Interfaces)
		possible += len(t.PossibleTypes)
		enumValues += len(t.EnumValues)
		inputFields += len(t.InputFields)
		for _, f := range t.Fields {
			args += len(f.Args)
		}
	}
	for _, d := range s.dirList {
		dirArgs += len(d.Args)
	}
	s.eachTypeRef(func(t *Type) {
		n := 0
		for ; t.OfType != nil; t = t.OfType {
			n++
		}
		s.maxWrapping = max(s.maxWrapping, n)
	})
	types, dirs := len(s.typeList), len(s.dirList)
	it := introspectionTypes().types
	size := func(typeName, fieldName string, n int) {
		c := defaultFieldCost
		c.assumedSize, c.slicing = n, nil
		s.fieldCosts[it[typeName].fieldMap[fieldName]] = c
	}
	size("__Schema", "types", types)
	size("__Schema", "directives", dirs)
	size("__Type", "fields", ceilDiv(fields, types))
	size("__Type", "interfaces", ceilDiv(interfaces, types))
	size("__Type", "possibleTypes", ceilDiv(possible, types))
	size("__Type", "enumValues", ceilDiv(enumValues, types))
	size("__Type", "inputFields", ceilDiv(inputFields, types))
	size("__Field", "args", ceilDiv(args, fields))
	size("__Directive", "args", ceilDiv(dirArgs, dirs))
}

func ceilDiv(a, b int) int {
	if b == 0 {
		return 0
	}
	return (a + b - 1) / b
}

// checkCost refuses op, its variables coerced, when it costs over Limits.MaxCost.
func (s *Schema) checkCost(p *preparedDocument, op *OperationDefinition, vars map[string]any) *Error {
	if s.Limits.MaxCost <= 0 {
		return nil
	}
	cost := s.operationCost(p, op, vars)
	if cost <= s.Limits.MaxCost {
		return nil
	}
	err := newError(CodeCostLimitExceeded, fmt.Sprintf("The operation's estimated cost is %d, over the limit of %d.", cost, s.Limits.MaxCost), op.Pos)
	err.Extensions["cost"] = cost
	err.Extensions["maxCost"] = s.Limits.MaxCost
	return err
}

// operationCost returns the cost of op, kept with p unless it depends on variables.
func (s *Schema) operationCost(p *preparedDocument, op *OperationDefinition, vars map[string]any) int {
	if n, ok := p.costs.Load(op); ok {
		return n.(int)
	}
	a := costAnalysis{s: s, fragments: p.fragments, vars: vars}
	n := a.selectionSet(op.SelectionSet, s.rootType(op.Operation))
	if !a.varied {
		p.costs.Store(op, n)
	}
	return n
}

type costAnalysis struct {
	s         *Schema
	fragments map[string]*FragmentDefinition
	vars      map[string]any
	spreads   map[string]int // each fragment's cost, the same wherever spread; -1 while walked
	varied    bool           // a variable's value was read: the cost holds for these variables only
	ofTypes   int            // __Type.ofType fields around the one being costed
}

// selectionSet returns the cost of set on type t, all type conditions counted.
func (a *costAnalysis) selectionSet(set *SelectionSet, t *Type) int {
	if set == nil || t == nil {
		return 0
	}
	total := 0
	for _, sel := range set.Selections {
		switch s := sel.(type) {
		case *Field:
			if !a.skipped(s.Directives) {
				total = addCost(total, a.field(s, t))
			}
		case *InlineFragment:
			if !a.skipped(s.Directives) {
				on := t
				if s.TypeCondition != nil {
					on = a.s.types[s.TypeCondition.Name]
				}
				total = addCost(total, a.selectionSet(s.SelectionSet, on))
			}
		case *FragmentSpread:
			if !a.skipped(s.Directives) {
				total = addCost(total, a.spread(s.Name))
			}
		}
	}
	return total
}

func (a *costAnalysis) spread(name string) int {
	if n, ok := a.spreads[name]; ok {
		return max(n, 0) // -1: a cycle, which validation has refused already
	}
	f := a.fragments[name]
	if f == nil {
		return 0
	}
	if a.spreads == nil {
		a.spreads = make(map[string]int)
	}
	a.spreads[name] = -1
	n := a.selectionSet(f.SelectionSet, a.s.types[f.TypeCondition.Name])
	a.spreads[name] = n
	return n
}

func (a *costAnalysis) field(f *Field, t *Type) int {
	def := fieldDef(a.s, t, f.Name)
	if def == nil {
		return 0 // not on this type; validation has said so
	}
	c := a.s.costOf(def)
	if t.Name == "__Type" && def.Name == "ofType" {
		// Deeper than any type of the schema is wrapped, ofType is null.
		if a.ofTypes >= a.s.maxWrapping {
			return c.weight
		}
		a.ofTypes++
		defer func() { a.ofTypes-- }()
	}
	children := a.selectionSet(f.SelectionSet, def.Type.Named())
	if def.Type.Nullable().Kind == List {
		children = mulCost(children, a.listSize(f, def, c))
	}
	return addCost(c.weight, children)
}

// listSize is the largest of f's slicing arguments given, or its assumed size.
func (a *costAnalysis) listSize(f *Field, def *FieldDef, c fieldCost) int {
	size, given := 0, false
	for _, name := range c.slicing {
		if n, ok := a.intArgument(f, def, name); ok {
			size, given = max(size, n), true
		}
	}
	if !given {
		return c.assumedSize
	}
	return size
}

// intArgument returns f's Int argument name: its literal, variable or default,
// a negative one as 0 (the resolver refuses it); null or none is not a size.
func (a *costAnalysis) intArgument(f *Field, def *FieldDef, name string) (int, bool) {
	v := argumentNamed(f.Arguments, name) // validation has refused a repeated one
	if v != nil && v.Kind == VariableValue {
		a.varied = true
		given, ok := a.vars[v.Raw]
		if ok {
			n, isInt := toInt64(given)
			return clampSize(n), isInt
		}
		v = nil // absent: as if not written
	}
	if v == nil {
		if d := def.Arg(name); d != nil {
			v = d.DefaultValue
		}
	}
	if v == nil || v.Kind != IntValue {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	if err != nil {
		return math.MaxInt32, true // out of range for Int; validation refuses it
	}
	return clampSize(n), true
}

func clampSize(n int64) int {
	return int(min(max(n, 0), math.MaxInt32))
}

// skipped evaluates @skip and @include as execution will.
func (a *costAnalysis) skipped(ds []*Directive) bool {
	for _, d := range ds {
		for _, arg := range d.Arguments {
			if (d.Name == "skip" || d.Name == "include") && arg.Value.Kind == VariableValue {
				a.varied = true
			}
		}
	}
	return skippedBy(a.s, ds, a.vars, nil) // an error is the execution's to give
}

// addCost and mulCost saturate at math.MaxInt: a hostile query's cost must
// still compare as large.
func addCost(x, y int) int {
	if x > math.MaxInt-y {
		return math.MaxInt
	}
	return x + y
}

func mulCost(x, y int) int {
	if x != 0 && y > math.MaxInt/x {
		return math.MaxInt
	}
	return x * y
}
