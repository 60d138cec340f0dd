package graphql

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The validation rules of spec section 5, named after graphql-js's.

// The rules that need the whole document first read it when they are made,
// before the walk.

func executableDefinitionsRule(c *vctx, _ *hooks) {
	for _, d := range c.doc.Definitions {
		switch d := d.(type) {
		case *SchemaDefinition:
			c.report("The schema definition is not executable.", d.Pos)
		case *TypeDefinition:
			c.report(fmt.Sprintf("The %q definition is not executable.", d.Name), d.Pos)
		case *DirectiveDefinition:
			c.report(fmt.Sprintf("The \"@%s\" definition is not executable.", d.Name), d.Pos)
		}
	}
}

// unique remembers where name was first seen in seen, and reports it there
// and at pos when it was seen before; format gets the name.
func (c *vctx) unique(seen map[string]Position, name string, pos Position, format string) {
	if first, ok := seen[name]; ok {
		c.report(fmt.Sprintf(format, name), first, pos)
	} else {
		seen[name] = pos
	}
}

// reportDuplicates reports each name that more than one of items has, with
// the positions of all of them, in order of first appearance.
func reportDuplicates[T any](c *vctx, items []T, name func(T) (string, Position), format string) {
	var order []string
	groups := map[string][]Position{}
	for _, it := range items {
		n, pos := name(it)
		if _, ok := groups[n]; !ok {
			order = append(order, n)
		}
		groups[n] = append(groups[n], pos)
	}
	for _, n := range order {
		if len(groups[n]) > 1 {
			c.report(fmt.Sprintf(format, n), groups[n]...)
		}
	}
}

func uniqueOperationNamesRule(c *vctx, on *hooks) {
	known := map[string]Position{}
	on.operation = append(on.operation, func(op *OperationDefinition) {
		if op.Name != "" {
			c.unique(known, op.Name, op.NamePos, "There can be only one operation named %q.")
		}
	})
}

func loneAnonymousOperationRule(c *vctx, on *hooks) {
	count := 0
	for _, d := range c.doc.Definitions {
		if _, ok := d.(*OperationDefinition); ok {
			count++
		}
	}
	on.operation = append(on.operation, func(op *OperationDefinition) {
		if op.Name == "" && count > 1 {
			c.report("This anonymous operation must be the only defined operation.", op.Pos)
		}
	})
}

func singleFieldSubscriptionsRule(c *vctx, on *hooks) {
	on.operation = append(on.operation, func(op *OperationDefinition) {
		root := c.schema.Subscription
		if op.Operation != Subscription || root == nil {
			return
		}
		subscription := "Anonymous Subscription"
		if op.Name != "" {
			subscription = fmt.Sprintf("Subscription %q", op.Name)
		}
		groups, _ := collectFields(c.schema, c.fragments, root, []*SelectionSet{op.SelectionSet}, nil, true, false)
		if len(groups) > 1 {
			var locs []Position
			for _, g := range groups[1:] {
				locs = append(locs, fieldPositions(g.fields)...)
			}
			c.report(subscription+" must select only one top level field.", locs...)
		}
		for _, g := range groups {
			if strings.HasPrefix(g.fields[0].Name, "__") {
				c.report(subscription+" must not select an introspection top level field.", fieldPositions(g.fields)...)
			}
		}
	})
}

func fieldPositions(fs []*Field) []Position {
	locs := make([]Position, len(fs))
	for i, f := range fs {
		locs[i] = f.Pos
	}
	return locs
}

func knownTypeNamesRule(c *vctx, on *hooks) {
	defined := map[string]bool{}
	for _, d := range c.doc.Definitions {
		if t, ok := d.(*TypeDefinition); ok && !t.Extend {
			defined[t.Name] = true
		}
	}
	on.typeRef = append(on.typeRef, func(r *TypeRef) {
		if c.schema.types[r.Name] == nil && !defined[r.Name] {
			c.report(fmt.Sprintf("Unknown type %q.", r.Name), r.Pos)
		}
	})
}

func fragmentsOnCompositeTypesRule(c *vctx, on *hooks) {
	on.inline = append(on.inline, func(f *InlineFragment, _, _ *Type) {
		if f.TypeCondition == nil {
			return
		}
		if t := c.typeFromRef(f.TypeCondition); t != nil && !t.isComposite() {
			c.report(fmt.Sprintf("Fragment cannot condition on non composite type %q.", t), f.TypeCondition.Pos)
		}
	})
	on.fragment = append(on.fragment, func(f *FragmentDefinition) {
		if t := c.typeFromRef(f.TypeCondition); t != nil && !t.isComposite() {
			c.report(fmt.Sprintf("Fragment %q cannot condition on non composite type %q.", f.Name, t), f.TypeCondition.Pos)
		}
	})
}

func variablesAreInputTypesRule(c *vctx, on *hooks) {
	on.variableDef = append(on.variableDef, func(v *VariableDefinition) {
		if t := c.typeFromRef(v.Type); t != nil && !t.isInput() {
			c.report(fmt.Sprintf("Variable \"$%s\" cannot be non-input type %q.", v.Name, v.Type), v.Type.Pos)
		}
	})
}

func scalarLeafsRule(c *vctx, on *hooks) {
	on.field = append(on.field, func(f *Field, _ *Type, def *FieldDef) {
		if def == nil {
			return
		}
		if def.Type.Named().isLeaf() {
			if f.SelectionSet != nil {
				c.report(fmt.Sprintf("Field %q must not have a selection since type %q has no subfields.", f.Name, def.Type), f.SelectionSet.Pos)
			}
		} else if f.SelectionSet == nil {
			c.report(fmt.Sprintf("Field %q of type %q must have a selection of subfields. Did you mean \"%s { ... }\"?", f.Name, def.Type, f.Name), f.Pos)
		}
	})
}

func fieldsOnCorrectTypeRule(c *vctx, on *hooks) {
	on.field = append(on.field, func(f *Field, parent *Type, def *FieldDef) {
		if parent != nil && def == nil {
			c.report(fmt.Sprintf("Cannot query field %q on type %q.", f.Name, parent.Name), f.Pos)
		}
	})
}

func uniqueFragmentNamesRule(c *vctx, on *hooks) {
	known := map[string]Position{}
	on.fragment = append(on.fragment, func(f *FragmentDefinition) {
		c.unique(known, f.Name, f.NamePos, "There can be only one fragment named %q.")
	})
}

func knownFragmentNamesRule(c *vctx, on *hooks) {
	on.spread = append(on.spread, func(s *FragmentSpread, _ *Type) {
		if c.fragments[s.Name] == nil {
			c.report(fmt.Sprintf("Unknown fragment %q.", s.Name), s.NamePos)
		}
	})
}

func noUnusedFragmentsRule(c *vctx, on *hooks) {
	on.leaveDocument = append(on.leaveDocument, func() {
		used := map[string]bool{}
		for _, d := range c.doc.Definitions {
			if op, ok := d.(*OperationDefinition); ok {
				for _, f := range c.referencedFragments(op) {
					used[f.Name] = true
				}
			}
		}
		for _, d := range c.doc.Definitions {
			if f, ok := d.(*FragmentDefinition); ok && !used[f.Name] {
				c.report(fmt.Sprintf("Fragment %q is never used.", f.Name), f.Pos)
			}
		}
	})
}

// isSubTypeOf reports whether t is a possible type of the abstract type a,
// or an interface implementing a.
func isSubTypeOf(a, t *Type) bool {
	return a.isPossibleType(t) || (a.Kind == Interface && t.Kind == Interface && implements(t, a))
}

func doTypesOverlap(a, b *Type) bool {
	switch {
	case a == b:
		return true
	case a.isAbstract() && b.isAbstract():
		return slices.ContainsFunc(a.PossibleTypes, func(t *Type) bool { return isSubTypeOf(b, t) })
	case a.isAbstract():
		return isSubTypeOf(a, b)
	case b.isAbstract():
		return isSubTypeOf(b, a)
	}
	return false
}

func possibleFragmentSpreadsRule(c *vctx, on *hooks) {
	on.inline = append(on.inline, func(f *InlineFragment, parent, t *Type) {
		if t != nil && parent != nil && t.isComposite() && !doTypesOverlap(t, parent) {
			c.report(fmt.Sprintf("Fragment cannot be spread here as objects of type %q can never be of type %q.", parent, t), f.Pos)
		}
	})
	on.spread = append(on.spread, func(s *FragmentSpread, parent *Type) {
		f := c.fragments[s.Name]
		if f == nil || parent == nil {
			return
		}
		t := c.typeFromRef(f.TypeCondition)
		if t != nil && t.isComposite() && !doTypesOverlap(t, parent) {
			c.report(fmt.Sprintf("Fragment %q cannot be spread here as objects of type %q can never be of type %q.", s.Name, parent, t), s.Pos)
		}
	})
}

func noFragmentCyclesRule(c *vctx, on *hooks) {
	visited := map[string]bool{}
	var path []*FragmentSpread
	indexByName := map[string]int{}
	var detect func(f *FragmentDefinition)
	detect = func(f *FragmentDefinition) {
		if visited[f.Name] {
			return
		}
		visited[f.Name] = true
		spreads := spreadsIn(f.SelectionSet)
		if len(spreads) == 0 {
			return
		}
		indexByName[f.Name] = len(path)
		for _, s := range spreads {
			cycle, inPath := indexByName[s.Name]
			path = append(path, s)
			if !inPath {
				if g := c.fragments[s.Name]; g != nil {
					detect(g)
				}
			} else {
				cyc := path[cycle:]
				var via []string
				locs := make([]Position, len(cyc))
				for i, sp := range cyc {
					locs[i] = sp.Pos
					if i < len(cyc)-1 {
						via = append(via, strconv.Quote(sp.Name))
					}
				}
				msg := fmt.Sprintf("Cannot spread fragment %q within itself", s.Name)
				if len(via) > 0 {
					msg += " via " + strings.Join(via, ", ")
				}
				c.report(msg+".", locs...)
			}
			path = path[:len(path)-1]
		}
		delete(indexByName, f.Name)
	}
	on.fragment = append(on.fragment, detect)
}

func uniqueVariableNamesRule(c *vctx, on *hooks) {
	on.operation = append(on.operation, func(op *OperationDefinition) {
		reportDuplicates(c, op.Variables, func(v *VariableDefinition) (string, Position) { return v.Name, v.NamePos },
			"There can be only one variable named \"$%s\".")
	})
}

func noUndefinedVariablesRule(c *vctx, on *hooks) {
	on.leaveOperation = append(on.leaveOperation, func(op *OperationDefinition) {
		defined := map[string]bool{}
		for _, v := range op.Variables {
			defined[v.Name] = true
		}
		by := "."
		if op.Name != "" {
			by = fmt.Sprintf(" by operation %q.", op.Name)
		}
		for _, u := range c.recursiveVariableUsages(op) {
			if !defined[u.node.Raw] {
				c.report(fmt.Sprintf("Variable \"$%s\" is not defined", u.node.Raw)+by, u.node.Pos, op.Pos)
			}
		}
	})
}

func noUnusedVariablesRule(c *vctx, on *hooks) {
	on.leaveOperation = append(on.leaveOperation, func(op *OperationDefinition) {
		used := map[string]bool{}
		for _, u := range c.recursiveVariableUsages(op) {
			used[u.node.Raw] = true
		}
		in := "."
		if op.Name != "" {
			in = fmt.Sprintf(" in operation %q.", op.Name)
		}
		for _, v := range op.Variables {
			if !used[v.Name] {
				c.report(fmt.Sprintf("Variable \"$%s\" is never used", v.Name)+in, v.Pos)
			}
		}
	})
}

func knownDirectivesRule(c *vctx, on *hooks) {
	on.directive = append(on.directive, func(d *Directive, loc string, def *DirectiveDef, _ argOwner) {
		if def == nil {
			c.report(fmt.Sprintf("Unknown directive \"@%s\".", d.Name), d.Pos)
		} else if !slices.Contains(def.Locations, loc) {
			c.report(fmt.Sprintf("Directive \"@%s\" may not be used on %s.", d.Name, loc), d.Pos)
		}
	})
}

func uniqueDirectivesPerLocationRule(c *vctx, on *hooks) {
	on.directives = append(on.directives, func(ds []*Directive, _ string) {
		seen := map[string]Position{}
		for _, d := range ds {
			if def := c.schema.directives[d.Name]; def != nil && !def.IsRepeatable {
				c.unique(seen, d.Name, d.Pos, "The directive \"@%s\" can only be used once at this location.")
			}
		}
	})
}

func knownArgumentNamesRule(c *vctx, on *hooks) {
	on.argument = append(on.argument, func(a *Argument, def *InputValue, o argOwner) {
		if def != nil {
			return
		}
		switch {
		case o.directive != nil:
			if o.dirDef != nil {
				c.report(fmt.Sprintf("Unknown argument %q on directive \"@%s\".", a.Name, o.dirDef.Name), a.Pos)
			}
		case o.field != nil && o.parent != nil:
			c.report(fmt.Sprintf("Unknown argument %q on field \"%s.%s\".", a.Name, o.parent.Name, o.field.Name), a.Pos)
		}
	})
}

func uniqueArgumentNamesRule(c *vctx, on *hooks) {
	on.arguments = append(on.arguments, func(args []*Argument) {
		if len(args) > 1 {
			reportDuplicates(c, args, func(a *Argument) (string, Position) { return a.Name, a.Pos },
				"There can be only one argument named %q.")
		}
	})
}

func valuesOfCorrectTypeRule(c *vctx, on *hooks) {
	on.values = append(on.values, valueHooks{
		value: func(v *Value, t, _ *Type) bool {
			switch v.Kind {
			case VariableValue:
				return true
			case NullValue:
				if t != nil && t.Kind == NonNull {
					c.report(fmt.Sprintf("Expected value of type %q, found null.", t), v.Pos)
				}
				return true
			case ListValue:
				if t == nil || t.Nullable().Kind != List {
					c.checkLeafLiteral(v, t)
					return false
				}
				return true
			case ObjectValue:
				if t == nil || t.Named().Kind != InputObject {
					c.checkLeafLiteral(v, t)
					return false
				}
				it := t.Named()
				given := map[string]*ObjectField{}
				for _, f := range v.Fields {
					if _, dup := given[f.Name]; !dup {
						given[f.Name] = f
					}
				}
				for _, def := range it.InputFields {
					if given[def.Name] == nil && def.Type.Kind == NonNull && def.DefaultValue == nil {
						c.report(fmt.Sprintf("Field \"%s.%s\" of required type %q was not provided.", it.Name, def.Name, def.Type), v.Pos)
					}
				}
				if it.OneOf {
					if len(given) != 1 {
						c.report(fmt.Sprintf("OneOf Input Object %q must specify exactly one key.", it.Name), v.Pos)
					} else {
						for name, f := range given {
							if f.Value.Kind == NullValue {
								c.report(fmt.Sprintf("Field \"%s.%s\" must be non-null.", it.Name, name), v.Pos)
							}
						}
					}
				}
				return true
			}
			c.checkLeafLiteral(v, t)
			return true
		},
		objectField: func(f *ObjectField, parent *Type, def *InputValue) {
			if def == nil && parent != nil {
				c.report(fmt.Sprintf("Field %q is not defined by type %q.", f.Name, parent.Name), f.Pos)
			}
		},
	})
}

func (c *vctx) checkLeafLiteral(v *Value, t *Type) {
	if t == nil {
		return
	}
	n := t.Named()
	if !n.isLeaf() {
		c.report(fmt.Sprintf("Expected value of type %q, found %s.", t, printLiteral(v)), v.Pos)
		return
	}
	if _, err := parseLiteral(v, n, nil); err != nil { // an empty message: the generic one fits
		c.report(cmp.Or(err.Error(), fmt.Sprintf("Expected value of type %q, found %s.", t, printLiteral(v))), v.Pos)
	}
}

func providedRequiredArgumentsRule(c *vctx, on *hooks) {
	on.leaveField = append(on.leaveField, func(f *Field, _ *Type, def *FieldDef) {
		if def != nil {
			c.requireArguments(fmt.Sprintf("Field %q", def.Name), def.Args, f.Arguments, f.Pos)
		}
	})
	on.leaveDirective = append(on.leaveDirective, func(d *Directive, def *DirectiveDef) {
		if def != nil {
			c.requireArguments(fmt.Sprintf("Directive \"@%s\"", def.Name), def.Args, d.Arguments, d.Pos)
		}
	})
}

func (c *vctx) requireArguments(owner string, defs []*InputValue, args []*Argument, pos Position) {
	for _, a := range defs {
		given := slices.ContainsFunc(args, func(g *Argument) bool { return g.Name == a.Name })
		if a.Type.Kind == NonNull && a.DefaultValue == nil && !given {
			c.report(fmt.Sprintf("%s argument %q of type %q is required, but it was not provided.", owner, a.Name, a.Type), pos)
		}
	}
}

func variablesInAllowedPositionRule(c *vctx, on *hooks) {
	on.leaveOperation = append(on.leaveOperation, func(op *OperationDefinition) {
		defs := map[string]*VariableDefinition{}
		for _, v := range op.Variables {
			defs[v.Name] = v
		}
		for _, u := range c.recursiveVariableUsages(op) {
			vd := defs[u.node.Raw]
			if vd == nil || u.typ == nil {
				continue
			}
			vt := c.typeFromRef(vd.Type)
			if vt == nil {
				continue
			}
			if !allowedVariableUsage(vt, vd.DefaultValue, u.typ, u.hasDefault) {
				c.report(fmt.Sprintf("Variable \"$%s\" of type %q used in position expecting type %q.", vd.Name, vt, u.typ), vd.Pos, u.node.Pos)
			} else if u.parent != nil && u.parent.OneOf && vt.Kind != NonNull {
				c.report(fmt.Sprintf("Variable \"$%s\" is of type %q but must be non-nullable to be used for OneOf Input Object %q.", vd.Name, vt, u.parent.Name), vd.Pos, u.node.Pos)
			}
		}
	})
}

// allowedVariableUsage implements IsVariableUsageAllowed (spec 5.8.5).
func allowedVariableUsage(varType *Type, varDefault *Value, locType *Type, locHasDefault bool) bool {
	if locType.Kind == NonNull && varType.Kind != NonNull {
		hasNonNullDefault := varDefault != nil && varDefault.Kind != NullValue
		if !hasNonNullDefault && !locHasDefault {
			return false
		}
		return isSubType(varType, locType.OfType)
	}
	return isSubType(varType, locType)
}

func uniqueInputFieldNamesRule(c *vctx, on *hooks) {
	on.values = append(on.values, valueHooks{value: func(v *Value, _, _ *Type) bool {
		if v.Kind != ObjectValue {
			return true
		}
		known := map[string]Position{}
		for _, f := range v.Fields {
			c.unique(known, f.Name, f.Pos, "There can be only one input field named %q.")
		}
		return true
	}})
}

// The rules of @defer and @stream, as graphql-js 17 has them. They apply to
// the directives by name, which a schema declares (schema.graphql).

func isDeferOrStream(name string) bool { return name == "defer" || name == "stream" }

// titled is "Defer" for defer: graphql-js's messages name the directive so.
func titled(name string) string { return strings.ToUpper(name[:1]) + name[1:] }

func deferStreamDirectiveOnRootFieldRule(c *vctx, on *hooks) {
	on.directive = append(on.directive, func(d *Directive, _ string, _ *DirectiveDef, where argOwner) {
		if !isDeferOrStream(d.Name) || where.parent == nil {
			return
		}
		for kind, root := range map[string]*Type{"mutation": c.schema.Mutation, "subscription": c.schema.Subscription} {
			if where.parent == root {
				c.report(fmt.Sprintf("%s directive cannot be used on root %s type %q.", titled(d.Name), kind, root.Name), d.Pos)
			}
		}
	})
}

// deferStreamDirectiveOnValidOperationsRule refuses @defer and @stream that
// may take effect in a subscription, in its selections or in a fragment it
// spreads: a subscription's events each have one result.
func deferStreamDirectiveOnValidOperationsRule(c *vctx, on *hooks) {
	inSubscription := map[string]bool{}
	for _, d := range c.doc.Definitions {
		if op, ok := d.(*OperationDefinition); ok && op.Operation == Subscription {
			for _, f := range c.referencedFragments(op) {
				inSubscription[f.Name] = true
			}
		}
	}
	checked := false
	on.operation = append(on.operation, func(op *OperationDefinition) { checked = op.Operation == Subscription })
	on.fragment = append(on.fragment, func(f *FragmentDefinition) { checked = inSubscription[f.Name] })
	on.directives = append(on.directives, func(ds []*Directive, _ string) {
		if !checked || !mayApply(ds) {
			return
		}
		for _, d := range ds {
			if isDeferOrStream(d.Name) && !literalFalse(argumentNamed(d.Arguments, "if")) {
				c.report(fmt.Sprintf("%s directive not supported on subscription operations. Disable `@%s` by setting the `if` argument to `false`.", titled(d.Name), d.Name), d.Pos)
			}
		}
	})
}

// mayApply reports whether @skip and @include among ds may let their
// selection through; @skip without a literal false may not.
func mayApply(ds []*Directive) bool {
	for _, d := range ds {
		cond := argumentNamed(d.Arguments, "if")
		switch d.Name {
		case "skip":
			if !literalFalse(cond) {
				return false
			}
		case "include":
			if cond != nil && (literalFalse(cond) || cond.Kind == VariableValue) {
				return false
			}
		}
	}
	return true
}

func literalFalse(v *Value) bool { return v != nil && v.Kind == BooleanValue && v.Raw == "false" }

func argumentNamed(args []*Argument, name string) *Value {
	for _, a := range args {
		if a.Name == name {
			return a.Value
		}
	}
	return nil
}

func deferStreamDirectiveLabelRule(c *vctx, on *hooks) {
	known := map[string]Position{}
	on.directive = append(on.directive, func(d *Directive, _ string, _ *DirectiveDef, _ argOwner) {
		label := argumentNamed(d.Arguments, "label")
		switch {
		case !isDeferOrStream(d.Name) || label == nil:
		case label.Kind != StringValue:
			c.report(fmt.Sprintf("Directive %q's label argument must be a static string.", d.Name), d.Pos)
		default:
			if first, ok := known[label.Raw]; ok {
				c.report("Defer/Stream directive label argument must be unique.", first, d.Pos)
			} else {
				known[label.Raw] = d.Pos
			}
		}
	})
}

func streamDirectiveOnListFieldRule(c *vctx, on *hooks) {
	on.directive = append(on.directive, func(d *Directive, _ string, _ *DirectiveDef, where argOwner) {
		if d.Name == "stream" && where.field != nil && where.parent != nil && where.field.Type.Nullable().Kind != List {
			c.report(fmt.Sprintf("Directive \"@stream\" cannot be used on non-list field \"%s.%s\".", where.parent.Name, where.field.Name), d.Pos)
		}
	})
}
