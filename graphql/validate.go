package graphql

// Validation (spec section 5): a walker traverses the document once, tracking
// types, and calls the hooks each rule sets. The rules are named as
// graphql-js's, which the shared conformance cases name.

// validate checks an executable document with every rule of the specification. As
// graphql-js, it stops after Limits.MaxErrors errors with a last one saying so.
func (s *Schema) validate(doc *Document) []*Error {
	return validate(s, doc, specifiedRules)
}

// ruleFunc adds a rule's hooks to on.
type ruleFunc func(c *vctx, on *hooks)

// specifiedRules are the rules run by Schema.validate, in graphql-js's order.
var specifiedRules = []ruleFunc{
	executableDefinitionsRule,
	uniqueOperationNamesRule,
	loneAnonymousOperationRule,
	singleFieldSubscriptionsRule,
	knownTypeNamesRule,
	fragmentsOnCompositeTypesRule,
	variablesAreInputTypesRule,
	scalarLeafsRule,
	fieldsOnCorrectTypeRule,
	uniqueFragmentNamesRule,
	knownFragmentNamesRule,
	noUnusedFragmentsRule,
	possibleFragmentSpreadsRule,
	noFragmentCyclesRule,
	uniqueVariableNamesRule,
	noUndefinedVariablesRule,
	noUnusedVariablesRule,
	knownDirectivesRule,
	uniqueDirectivesPerLocationRule,
	deferStreamDirectiveOnRootFieldRule,
	deferStreamDirectiveOnValidOperationsRule,
	deferStreamDirectiveLabelRule,
	streamDirectiveOnListFieldRule,
	knownArgumentNamesRule,
	uniqueArgumentNamesRule,
	valuesOfCorrectTypeRule,
	providedRequiredArgumentsRule,
	variablesInAllowedPositionRule,
	overlappingFieldsCanBeMergedRule,
	uniqueInputFieldNamesRule,
}

// argOwner is what an argument belongs to: a field (with its parent type)
// or a directive. Any of them may be nil when unknown.
type argOwner struct {
	field     *FieldDef
	parent    *Type
	directive *Directive
	dirDef    *DirectiveDef
}

// hooks are the rules' hooks, each list in the rules' order.
type hooks struct {
	leaveDocument  []func()
	operation      []func(op *OperationDefinition)
	leaveOperation []func(op *OperationDefinition)
	fragment       []func(f *FragmentDefinition)
	variableDef    []func(v *VariableDefinition)
	typeRef        []func(r *TypeRef) // every named type in a variable type or type condition
	selectionSet   []func(set *SelectionSet, parent *Type)
	field          []func(f *Field, parent *Type, def *FieldDef)
	leaveField     []func(f *Field, parent *Type, def *FieldDef)
	spread         []func(s *FragmentSpread, parent *Type)
	inline         []func(f *InlineFragment, parent, typ *Type)
	directives     []func(ds []*Directive, loc string)
	directive      []func(d *Directive, loc string, def *DirectiveDef, where argOwner)
	leaveDirective []func(d *Directive, def *DirectiveDef)
	arguments      []func(args []*Argument)
	argument       []func(a *Argument, def *InputValue, owner argOwner)
	values         []valueHooks
}

// valueHooks are one rule's hooks on values. When value returns false,
// neither sees that value's children.
type valueHooks struct {
	value       func(v *Value, typ *Type, parent *Type) bool
	objectField func(f *ObjectField, parent *Type, def *InputValue) // may be nil
}

// vctx is the state the rules share while validating one document.
type vctx struct {
	schema    *Schema
	doc       *Document
	fragments map[string]*FragmentDefinition
	errors    []*Error

	usages     map[any][]varUsage
	referenced map[*OperationDefinition][]*FragmentDefinition

	// aborted is set once validation has given up (too many errors, or too
	// much work); the walker then stops and further reports are dropped.
	aborted bool
}

// tooManyErrors is graphql-js's message for validation cut short by maxErrors.
const tooManyErrors = "Too many validation errors, error limit reached. Validation aborted."

func (c *vctx) report(msg string, locs ...Position) {
	if c.aborted {
		return
	}
	if max := c.schema.Limits.MaxErrors; max > 0 && len(c.errors) >= max {
		c.abort(tooManyErrors)
		return
	}
	c.errors = append(c.errors, newError(codeValidationFailed, msg, locs...))
}

// abort ends validation with a last error saying why.
func (c *vctx) abort(msg string) {
	if !c.aborted {
		c.errors = append(c.errors, newError(codeValidationFailed, msg))
		c.aborted = true
	}
}

func validate(s *Schema, doc *Document, rules []ruleFunc) []*Error {
	c := &vctx{schema: s, doc: doc, fragments: fragmentsOf(doc),
		usages: map[any][]varUsage{}, referenced: map[*OperationDefinition][]*FragmentDefinition{}}
	on := &hooks{}
	for _, r := range rules {
		r(c, on)
	}
	w := &walker{c: c, on: on, skip: make([]*Value, len(on.values))}
	w.document(doc)
	return c.errors
}

// typeFromRef resolves a type reference against the schema; nil when the
// named type is unknown.
func (c *vctx) typeFromRef(r *TypeRef) *Type {
	if r.Kind == NamedTypeRef {
		return c.schema.types[r.Name]
	}
	e := c.typeFromRef(r.Elem)
	if e == nil {
		return nil
	}
	return &Type{Kind: wrapperKinds[r.Kind], OfType: e}
}

// wrapperKinds are the kinds of the types that list and non-null references name.
var wrapperKinds = [...]TypeKind{ListTypeRef: List, NonNullTypeRef: NonNull}

// fieldDef finds a field of a composite type, including the meta fields
// __typename, __schema and __type.
func fieldDef(s *Schema, parent *Type, name string) *FieldDef {
	if len(name) > 2 && name[0] == '_' && name[1] == '_' {
		switch name {
		case "__typename":
			return typenameField
		case "__schema":
			if parent == s.Query {
				return schemaField
			}
		case "__type":
			if parent == s.Query {
				return typeField
			}
		}
	}
	return parent.fieldMap[name]
}

// spreadsIn returns the fragment spreads inside set, in graphql-js's order.
func spreadsIn(set *SelectionSet) []*FragmentSpread {
	var spreads []*FragmentSpread
	stack := []*SelectionSet{set}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, sel := range s.Selections {
			switch sel := sel.(type) {
			case *FragmentSpread:
				spreads = append(spreads, sel)
			case *Field:
				if sel.SelectionSet != nil {
					stack = append(stack, sel.SelectionSet)
				}
			case *InlineFragment:
				stack = append(stack, sel.SelectionSet)
			}
		}
	}
	return spreads
}

// referencedFragments returns the fragments an operation uses, directly or
// through other fragments.
func (c *vctx) referencedFragments(op *OperationDefinition) []*FragmentDefinition {
	if r, ok := c.referenced[op]; ok {
		return r
	}
	var frags []*FragmentDefinition
	seen := map[string]bool{}
	stack := []*SelectionSet{op.SelectionSet}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, sp := range spreadsIn(s) {
			if seen[sp.Name] {
				continue
			}
			seen[sp.Name] = true
			if f := c.fragments[sp.Name]; f != nil {
				frags = append(frags, f)
				stack = append(stack, f.SelectionSet)
			}
		}
	}
	c.referenced[op] = frags
	return frags
}

// varUsage is a variable used in a value: the type expected there, whether
// that position has a default, and the input object around it, if any.
type varUsage struct {
	node       *Value
	typ        *Type
	hasDefault bool
	parent     *Type
}

func (c *vctx) variableUsages(def Definition) []varUsage {
	if u, ok := c.usages[def]; ok {
		return u
	}
	var us []varUsage
	w := &walker{c: c, skip: make([]*Value, 1)}
	w.on = &hooks{values: []valueHooks{{value: func(val *Value, typ, parent *Type) bool {
		if val.Kind == VariableValue {
			us = append(us, varUsage{node: val, typ: typ, hasDefault: w.locationDefault, parent: parent})
		}
		return true
	}}}}
	w.definition(def)
	c.usages[def] = us
	return us
}

func (c *vctx) recursiveVariableUsages(op *OperationDefinition) []varUsage {
	us := append([]varUsage(nil), c.variableUsages(op)...)
	for _, f := range c.referencedFragments(op) {
		us = append(us, c.variableUsages(f)...)
	}
	return us
}

// walker traverses a document with type information and calls the hooks.
type walker struct {
	c    *vctx
	on   *hooks
	skip []*Value // per value hook: the value whose subtree it does not want

	// locationDefault tells the value hook whether the position of the value
	// being visited has a default value (an argument or input field default).
	locationDefault bool
}

func (w *walker) document(doc *Document) {
	for _, d := range doc.Definitions {
		if w.c.aborted {
			return
		}
		w.definition(d)
	}
	for _, h := range w.on.leaveDocument {
		if !w.c.aborted {
			h()
		}
	}
}

func (w *walker) definition(d Definition) {
	switch d := d.(type) {
	case *OperationDefinition:
		w.operation(d)
	case *FragmentDefinition:
		w.fragment(d)
	}
}

var operationLocations = [...]string{Query: "QUERY", Mutation: "MUTATION", Subscription: "SUBSCRIPTION"}

func (w *walker) operation(op *OperationDefinition) {
	for _, h := range w.on.operation {
		h(op)
	}
	for _, vd := range op.Variables {
		if w.c.aborted {
			return
		}
		for _, h := range w.on.variableDef {
			h(vd)
		}
		w.typeRef(vd.Type)
		t := w.c.typeFromRef(vd.Type)
		if t != nil && !t.isInput() {
			t = nil
		}
		w.directives(vd.Directives, "VARIABLE_DEFINITION", argOwner{})
		if vd.DefaultValue != nil {
			w.locationDefault = false
			w.value(vd.DefaultValue, t, nil)
		}
	}
	w.directives(op.Directives, operationLocations[op.Operation], argOwner{})
	w.selectionSet(op.SelectionSet, w.c.schema.rootType(op.Operation))
	for _, h := range w.on.leaveOperation {
		if !w.c.aborted {
			h(op)
		}
	}
}

func (w *walker) fragment(f *FragmentDefinition) {
	for _, h := range w.on.fragment {
		h(f)
	}
	w.typeRef(f.TypeCondition)
	t := w.c.typeFromRef(f.TypeCondition)
	w.directives(f.Directives, "FRAGMENT_DEFINITION", argOwner{})
	w.selectionSet(f.SelectionSet, t)
}

func (w *walker) typeRef(r *TypeRef) {
	for r.Kind != NamedTypeRef {
		r = r.Elem
	}
	for _, h := range w.on.typeRef {
		h(r)
	}
}

// selectionSet visits a selection set whose enclosing type is t (the type of
// the field, possibly wrapped, or a fragment's type; nil when unknown).
func (w *walker) selectionSet(set *SelectionSet, t *Type) {
	if set == nil {
		return
	}
	var parent *Type
	if t != nil {
		if n := t.Named(); n.isComposite() {
			parent = n
		}
	}
	for _, h := range w.on.selectionSet {
		h(set, parent)
	}
	for _, sel := range set.Selections {
		if w.c.aborted {
			return
		}
		switch s := sel.(type) {
		case *Field:
			var def *FieldDef
			if parent != nil {
				def = fieldDef(w.c.schema, parent, s.Name)
			}
			for _, h := range w.on.field {
				h(s, parent, def)
			}
			var args []*InputValue
			var ft *Type
			if def != nil {
				args, ft = def.Args, def.Type
			}
			owner := argOwner{field: def, parent: parent}
			w.arguments(s.Arguments, args, owner)
			w.directives(s.Directives, "FIELD", owner)
			w.selectionSet(s.SelectionSet, ft)
			for _, h := range w.on.leaveField {
				h(s, parent, def)
			}
		case *FragmentSpread:
			for _, h := range w.on.spread {
				h(s, parent)
			}
			w.directives(s.Directives, "FRAGMENT_SPREAD", argOwner{parent: parent})
		case *InlineFragment:
			ft := parent
			if s.TypeCondition != nil {
				w.typeRef(s.TypeCondition)
				ft = w.c.typeFromRef(s.TypeCondition)
				if ft != nil && !ft.isOutput() {
					ft = nil
				}
			}
			for _, h := range w.on.inline {
				h(s, parent, ft)
			}
			w.directives(s.Directives, "INLINE_FRAGMENT", argOwner{parent: parent})
			w.selectionSet(s.SelectionSet, ft)
		}
	}
}

func (w *walker) directives(ds []*Directive, loc string, field argOwner) {
	if len(ds) == 0 {
		return
	}
	for _, h := range w.on.directives {
		h(ds, loc)
	}
	for _, d := range ds {
		if w.c.aborted {
			return
		}
		def := w.c.schema.directives[d.Name]
		for _, h := range w.on.directive {
			h(d, loc, def, field)
		}
		var args []*InputValue
		if def != nil {
			args = def.Args
		}
		w.arguments(d.Arguments, args, argOwner{directive: d, dirDef: def, field: field.field, parent: field.parent})
		for _, h := range w.on.leaveDirective {
			h(d, def)
		}
	}
}

func (w *walker) arguments(args []*Argument, defs []*InputValue, owner argOwner) {
	if len(args) == 0 {
		return
	}
	for _, h := range w.on.arguments {
		h(args)
	}
	for _, a := range args {
		if w.c.aborted {
			return
		}
		def := findInputValue(defs, a.Name)
		for _, h := range w.on.argument {
			h(a, def, owner)
		}
		var t *Type
		if def != nil {
			t = def.Type
		}
		w.locationDefault = def != nil && def.DefaultValue != nil
		w.value(a.Value, t, nil)
	}
}

// value visits a value expected to be of type t (nil when unknown); parent
// is the input object type whose field the value is.
func (w *walker) value(val *Value, t, parent *Type) {
	for i, h := range w.on.values {
		if w.skip[i] == nil && !h.value(val, t, parent) {
			w.skip[i] = val
		}
	}
	switch val.Kind {
	case ListValue:
		var item *Type
		if t != nil {
			item = t.Nullable()
			if item.Kind == List {
				item = item.OfType
			}
		}
		for _, e := range val.List {
			w.locationDefault = false
			w.value(e, item, nil)
		}
	case ObjectValue:
		var ot *Type
		if t != nil {
			if n := t.Named(); n.Kind == InputObject {
				ot = n
			}
		}
		for _, f := range val.Fields {
			var def *InputValue
			if ot != nil {
				def = ot.inputFieldMap[f.Name]
			}
			for i, h := range w.on.values {
				if h.objectField != nil && w.skip[i] == nil {
					h.objectField(f, ot, def)
				}
			}
			var ft *Type
			if def != nil {
				ft = def.Type
			}
			w.locationDefault = def != nil && def.DefaultValue != nil
			w.value(f.Value, ft, ot)
		}
	}
	for i := range w.skip {
		if w.skip[i] == val {
			w.skip[i] = nil
		}
	}
}
