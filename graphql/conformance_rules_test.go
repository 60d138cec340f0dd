package graphql

import "fmt"

// The graphql-js conformance cases (conformance_test.go) name the rule they
// test; rulesByName finds it. noDeprecatedCustomRule is graphql-js's optional
// rule, not one of the specification's: the service never runs it, so it
// lives here, for its conformance cases.

// rulesByName maps graphql-js rule names to their implementations.
var rulesByName = map[string]ruleFunc{
	"ExecutableDefinitionsRule":        executableDefinitionsRule,
	"UniqueOperationNamesRule":         uniqueOperationNamesRule,
	"LoneAnonymousOperationRule":       loneAnonymousOperationRule,
	"SingleFieldSubscriptionsRule":     singleFieldSubscriptionsRule,
	"KnownTypeNamesRule":               knownTypeNamesRule,
	"FragmentsOnCompositeTypesRule":    fragmentsOnCompositeTypesRule,
	"VariablesAreInputTypesRule":       variablesAreInputTypesRule,
	"ScalarLeafsRule":                  scalarLeafsRule,
	"FieldsOnCorrectTypeRule":          fieldsOnCorrectTypeRule,
	"UniqueFragmentNamesRule":          uniqueFragmentNamesRule,
	"KnownFragmentNamesRule":           knownFragmentNamesRule,
	"NoUnusedFragmentsRule":            noUnusedFragmentsRule,
	"PossibleFragmentSpreadsRule":      possibleFragmentSpreadsRule,
	"NoFragmentCyclesRule":             noFragmentCyclesRule,
	"UniqueVariableNamesRule":          uniqueVariableNamesRule,
	"NoUndefinedVariablesRule":         noUndefinedVariablesRule,
	"NoUnusedVariablesRule":            noUnusedVariablesRule,
	"KnownDirectivesRule":              knownDirectivesRule,
	"UniqueDirectivesPerLocationRule":  uniqueDirectivesPerLocationRule,
	"KnownArgumentNamesRule":           knownArgumentNamesRule,
	"UniqueArgumentNamesRule":          uniqueArgumentNamesRule,
	"ValuesOfCorrectTypeRule":          valuesOfCorrectTypeRule,
	"ProvidedRequiredArgumentsRule":    providedRequiredArgumentsRule,
	"VariablesInAllowedPositionRule":   variablesInAllowedPositionRule,
	"OverlappingFieldsCanBeMergedRule": overlappingFieldsCanBeMergedRule,
	"UniqueInputFieldNamesRule":        uniqueInputFieldNamesRule,
	"NoDeprecatedCustomRule":           noDeprecatedCustomRule,
}

// noDeprecatedCustomRule is not part of the specification's rule set; it is
// graphql-js's optional rule reporting uses of deprecated schema elements.
func noDeprecatedCustomRule(c *vctx, on *hooks) {
	on.field = append(on.field, func(f *Field, parent *Type, def *FieldDef) {
		if def != nil && def.IsDeprecated && parent != nil {
			c.report(fmt.Sprintf("The field %s.%s is deprecated. %s", parent.Name, def.Name, def.DeprecationReason), f.Pos)
		}
	})
	on.argument = append(on.argument, func(a *Argument, def *InputValue, o argOwner) {
		if def == nil || !def.IsDeprecated {
			return
		}
		if o.directive != nil {
			c.report(fmt.Sprintf("Directive \"@%s\" argument %q is deprecated. %s", o.dirDef.Name, def.Name, def.DeprecationReason), a.Pos)
		} else if o.field != nil && o.parent != nil {
			c.report(fmt.Sprintf("Field \"%s.%s\" argument %q is deprecated. %s", o.parent.Name, o.field.Name, def.Name, def.DeprecationReason), a.Pos)
		}
	})
	on.values = append(on.values, valueHooks{
		value: func(v *Value, t, _ *Type) bool {
			if v.Kind == EnumValue && t != nil {
				if n := t.Named(); n.Kind == Enum {
					if e := n.enumMap[v.Raw]; e != nil && e.IsDeprecated {
						c.report(fmt.Sprintf("The enum value \"%s.%s\" is deprecated. %s", n.Name, e.Name, e.DeprecationReason), v.Pos)
					}
				}
			}
			return true
		},
		objectField: func(f *ObjectField, parent *Type, def *InputValue) {
			if def != nil && def.IsDeprecated {
				c.report(fmt.Sprintf("The input field %s.%s is deprecated. %s", parent.Name, def.Name, def.DeprecationReason), f.Pos)
			}
		},
	})
}
