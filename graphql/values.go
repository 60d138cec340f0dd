package graphql

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
)

// Input coercion (spec 3.5, 3.10, 6.4.1): variable values arriving as
// decoded JSON and literals written in the document become Go values:
// Int → int, Float → float64, String and ID → string, Boolean → bool,
// enum → the value's name, input object → map[string]any, list → []any,
// custom scalars → whatever their ParseValue/ParseLiteral return.

// coerceVariables implements CoerceVariableValues.
func coerceVariables(s *Schema, op *OperationDefinition, given map[string]any) (map[string]any, []*Error) {
	if len(op.Variables) == 0 {
		return nil, nil // nothing to coerce; reading a nil map finds nothing, as an empty one would
	}
	out := make(map[string]any, len(op.Variables))
	var errs []*Error
	c := &vctx{schema: s}
	for _, vd := range op.Variables {
		t := c.typeFromRef(vd.Type)
		v, has := given[vd.Name]
		var err error
		var problem string // after "Variable "$name" "
		switch {
		case t == nil || !t.isInput():
			problem = fmt.Sprintf("expected value of unknown type %q.", vd.Type)
		case !has && vd.DefaultValue != nil:
			if out[vd.Name], err = coerceLiteral(vd.DefaultValue, t, nil); err != nil {
				problem = fmt.Sprintf("has an invalid default value: %v", err)
			}
		case t.Kind == NonNull && !has:
			problem = fmt.Sprintf("of required type %q was not provided.", t)
		case t.Kind == NonNull && v == nil:
			problem = fmt.Sprintf("of non-null type %q must not be null.", t)
		case has:
			if out[vd.Name], err = coerceInput(v, t); err != nil {
				problem = fmt.Sprintf("got invalid value %s; %v", jsonText(v), err)
			}
		}
		if problem != "" {
			errs = append(errs, newError(codeBadUserInput, fmt.Sprintf("Variable \"$%s\" %s", vd.Name, problem), vd.Pos))
		}
	}
	return out, errs
}

func jsonText(v any) string {
	return string(appendValue(nil, v))
}

// coerceInput coerces a JSON-decoded value to the input type t.
func coerceInput(v any, t *Type) (any, error) {
	if t.Kind == NonNull {
		if v == nil {
			return nil, fmt.Errorf("Expected non-nullable type %q not to be null.", t)
		}
		return coerceInput(v, t.OfType)
	}
	if v == nil {
		return nil, nil
	}
	switch t.Kind {
	case List:
		if l, ok := v.([]any); ok {
			out := make([]any, len(l))
			for i, e := range l {
				c, err := coerceInput(e, t.OfType)
				if err != nil {
					return nil, fmt.Errorf("at index %d: %w", i, err)
				}
				out[i] = c
			}
			return out, nil
		}
		c, err := coerceInput(v, t.OfType)
		if err != nil {
			return nil, err
		}
		return []any{c}, nil
	case InputObject:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Expected type %q to be an object.", t.Name)
		}
		for k := range m {
			if t.inputFieldMap[k] == nil {
				return nil, fmt.Errorf("Field %q is not defined by type %q.", k, t.Name)
			}
		}
		out := make(map[string]any, len(t.InputFields))
		for _, f := range t.InputFields {
			fv, has := m[f.Name]
			switch {
			case !has && f.DefaultValue != nil:
				dv, err := coerceLiteral(f.DefaultValue, f.Type, nil)
				if err != nil {
					return nil, err
				}
				out[f.Name] = dv
			case !has && f.Type.Kind == NonNull:
				return nil, fmt.Errorf("Field %q of required type %q was not provided.", f.Name, f.Type)
			case has:
				c, err := coerceInput(fv, f.Type)
				if err != nil {
					return nil, fmt.Errorf("in field %q: %w", f.Name, err)
				}
				out[f.Name] = c
			}
		}
		if t.OneOf {
			if len(m) != 1 {
				return nil, fmt.Errorf("Exactly one key must be specified for OneOf type %q.", t.Name)
			}
			for k, fv := range m {
				if fv == nil {
					return nil, fmt.Errorf("Field %q must be non-null.", k)
				}
			}
		}
		return out, nil
	case Enum:
		s, ok := v.(string)
		if !ok || t.enumMap[s] == nil {
			return nil, fmt.Errorf("Value %s does not exist in %q enum.", jsonText(v), t.Name)
		}
		return s, nil
	}
	return coerceScalarValue(v, t)
}

func coerceScalarValue(v any, t *Type) (any, error) {
	switch t.Name {
	case "Int":
		if n, ok := toInt64(v); ok {
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, fmt.Errorf("Int cannot represent non 32-bit signed integer value: %s", jsonText(v))
			}
			return int(n), nil
		}
		return nil, fmt.Errorf("Int cannot represent non-integer value: %s", jsonText(v))
	case "Float":
		if f, ok := toFloat64(v); ok {
			return f, nil
		}
		return nil, fmt.Errorf("Float cannot represent non numeric value: %s", jsonText(v))
	case "String":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("String cannot represent a non string value: %s", jsonText(v))
	case "Boolean":
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("Boolean cannot represent a non boolean value: %s", jsonText(v))
	case "ID":
		if s, ok := v.(string); ok {
			return s, nil
		}
		if n, ok := toInt64(v); ok {
			return strconv.FormatInt(n, 10), nil
		}
		return nil, fmt.Errorf("ID cannot represent value: %s", jsonText(v))
	}
	if t.scalar.ParseValue != nil {
		return t.scalar.ParseValue(v)
	}
	return v, nil
}

// toInt64 accepts integral numbers of any Go numeric type and json.Number.
func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int: // the common ones (int64: every ID), without reflection
		return int64(n), true
	case int64:
		return n, true
	case int8, int16, int32:
		return reflect.ValueOf(n).Int(), true
	case uint, uint8, uint16, uint32, uint64:
		u := reflect.ValueOf(n).Uint()
		return int64(u), u <= math.MaxInt64
	case float32:
		return floatToInt(float64(n))
	case float64:
		return floatToInt(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		if f, err := n.Float64(); err == nil {
			return floatToInt(f)
		}
	}
	return 0, false
}

func floatToInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || math.IsInf(f, 0) || f < -1<<63 || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

func toFloat64(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case float32:
		f := float64(n)
		return f, !math.IsNaN(f) && !math.IsInf(f, 0)
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	if i, ok := toInt64(v); ok {
		return float64(i), true
	}
	return 0, false
}

// absentError marks a variable reference whose variable has no value, so that
// the enclosing input field or argument is treated as not given.
type absentError struct{}

func (absentError) Error() string { return "absent" }

// coerceLiteral coerces a literal (which may reference variables, already
// coerced in vars) to the input type t.
func coerceLiteral(v *Value, t *Type, vars map[string]any) (any, error) {
	if v.Kind == VariableValue {
		val, ok := vars[v.Raw]
		if !ok { // a default in its place, or an error if there is none
			return nil, absentError{}
		}
		if val == nil && t.Kind == NonNull {
			return nil, fmt.Errorf("Variable \"$%s\" of non-null type %q must not be null.", v.Raw, t)
		}
		return val, nil
	}
	if t.Kind == NonNull {
		if v.Kind == NullValue {
			return nil, fmt.Errorf("Expected value of non-null type %q, found null.", t)
		}
		return coerceLiteral(v, t.OfType, vars)
	}
	if v.Kind == NullValue {
		return nil, nil
	}
	switch t.Kind {
	case List:
		items := v.List
		if v.Kind != ListValue {
			items = []*Value{v} // a single item stands for a list of one
		}
		out := make([]any, len(items))
		for i, e := range items {
			c, err := coerceLiteral(e, t.OfType, vars)
			if _, absent := err.(absentError); !absent && err != nil {
				return nil, err
			}
			out[i] = c // null for an absent variable
		}
		return out, nil
	case InputObject:
		if v.Kind != ObjectValue {
			return nil, fmt.Errorf("Expected value of type %q, found %s.", t, printLiteral(v))
		}
		out := make(map[string]any, len(t.InputFields))
		for _, f := range v.Fields {
			if t.inputFieldMap[f.Name] == nil {
				return nil, fmt.Errorf("Field %q is not defined by type %q.", f.Name, t.Name)
			}
		}
		for _, def := range t.InputFields {
			if i := slices.IndexFunc(v.Fields, func(f *ObjectField) bool { return f.Name == def.Name }); i >= 0 {
				c, err := coerceLiteral(v.Fields[i].Value, def.Type, vars)
				if _, absent := err.(absentError); !absent {
					if err != nil {
						return nil, err
					}
					out[def.Name] = c
					continue
				}
			}
			if def.DefaultValue != nil {
				c, err := coerceLiteral(def.DefaultValue, def.Type, nil)
				if err != nil {
					return nil, err
				}
				out[def.Name] = c
			} else if def.Type.Kind == NonNull {
				return nil, fmt.Errorf("Field \"%s.%s\" of required type %q was not provided.", t.Name, def.Name, def.Type)
			}
		}
		if t.OneOf {
			if len(out) != 1 {
				return nil, fmt.Errorf("OneOf Input Object %q must specify exactly one key.", t.Name)
			}
			for k, fv := range out {
				if fv == nil {
					return nil, fmt.Errorf("Field \"%s.%s\" must be non-null.", t.Name, k)
				}
			}
		}
		return out, nil
	}
	if (v.Kind == ListValue || v.Kind == ObjectValue) && (t.Kind != Scalar || t.builtin) {
		return nil, fmt.Errorf("Expected value of type %q, found %s.", t, printLiteral(v))
	}
	return parseLiteral(v, t, vars)
}

// coerceArguments implements CoerceArgumentValues for a field or directive: nil
// when defs is empty; an error is BAD_USER_INPUT, at the value that does not coerce.
func coerceArguments(defs []*InputValue, args []*Argument, vars map[string]any) (map[string]any, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(defs))
	for _, def := range defs {
		var at []Position
		fail := func(format string, a ...any) (map[string]any, error) {
			return nil, newError(codeBadUserInput, fmt.Sprintf(format, a...), at...)
		}
		if i := slices.IndexFunc(args, func(a *Argument) bool { return a.Name == def.Name }); i >= 0 {
			node := args[i].Value
			c, err := coerceLiteral(node, def.Type, vars)
			if err == nil {
				out[def.Name] = c
				continue
			}
			at = []Position{node.Pos} // where an error is located; not made for a value that coerces
			if _, absent := err.(absentError); !absent {
				return fail("Argument %q has invalid value %s: %v", def.Name, printLiteral(node), err)
			}
		}
		if def.DefaultValue != nil {
			c, err := coerceLiteral(def.DefaultValue, def.Type, nil)
			if err != nil {
				return fail("Argument %q has an invalid default value: %v", def.Name, err)
			}
			out[def.Name] = c
		} else if def.Type.Kind == NonNull {
			return fail("Argument %q of required type %q was not provided.", def.Name, def.Type)
		}
	}
	return out, nil
}

// parseLiteral coerces a literal to the leaf type t (spec 3.5 and 3.9 input
// coercion). vars supplies variable values inside custom scalar literals.
func parseLiteral(v *Value, t *Type, vars map[string]any) (any, error) {
	if t.Kind == Enum {
		if v.Kind != EnumValue {
			return nil, fmt.Errorf("Enum %q cannot represent non-enum value: %s.", t.Name, printLiteral(v))
		}
		if t.enumMap[v.Raw] == nil {
			return nil, fmt.Errorf("Value %q does not exist in %q enum.", v.Raw, t.Name)
		}
		return v.Raw, nil
	}
	switch t.Name {
	case "Int":
		if v.Kind != IntValue {
			return nil, fmt.Errorf("Int cannot represent non-integer value: %s", printLiteral(v))
		}
		n, err := strconv.ParseInt(v.Raw, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("Int cannot represent non 32-bit signed integer value: %s", v.Raw)
		}
		return int(n), nil
	case "Float":
		if v.Kind != IntValue && v.Kind != FloatValue {
			return nil, fmt.Errorf("Float cannot represent non numeric value: %s", printLiteral(v))
		}
		f, err := strconv.ParseFloat(v.Raw, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("Float cannot represent non numeric value: %s", v.Raw)
		}
		return f, nil
	case "String":
		if v.Kind != StringValue {
			return nil, fmt.Errorf("String cannot represent a non string value: %s", printLiteral(v))
		}
		return v.Raw, nil
	case "Boolean":
		if v.Kind != BooleanValue {
			return nil, fmt.Errorf("Boolean cannot represent a non boolean value: %s", printLiteral(v))
		}
		return v.Raw == "true", nil
	case "ID":
		if v.Kind != StringValue && v.Kind != IntValue {
			return nil, fmt.Errorf("ID cannot represent a non-string and non-integer value: %s", printLiteral(v))
		}
		return v.Raw, nil
	}
	if t.scalar.ParseLiteral != nil {
		return t.scalar.ParseLiteral(v)
	}
	raw := valueToJSON(v, vars)
	if t.scalar.ParseValue != nil {
		return t.scalar.ParseValue(raw)
	}
	return raw, nil
}

// valueToJSON converts a literal to the form JSON decoding would give it:
// numbers become float64 (or int when integral and small), lists []any,
// objects map[string]any.
func valueToJSON(v *Value, vars map[string]any) any {
	switch v.Kind {
	case VariableValue:
		return vars[v.Raw]
	case IntValue:
		if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			return int(n)
		}
		f, _ := strconv.ParseFloat(v.Raw, 64)
		return f
	case FloatValue:
		f, _ := strconv.ParseFloat(v.Raw, 64)
		return f
	case StringValue, EnumValue:
		return v.Raw
	case BooleanValue:
		return v.Raw == "true"
	case ListValue:
		l := make([]any, len(v.List))
		for i, e := range v.List {
			l[i] = valueToJSON(e, vars)
		}
		return l
	case ObjectValue:
		m := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			m[f.Name] = valueToJSON(f.Value, vars)
		}
		return m
	}
	return nil
}
