package graphql

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
)

// Request is one GraphQL request: a document, the operation to run and the
// variable values (as decoded from JSON; json.Number is accepted).
type Request struct {
	Query         string
	OperationName string
	Variables     map[string]any
}

// ResolveParams is what a resolver receives.
type ResolveParams struct {
	Context context.Context
	Source  any            // the parent object's value; nil at the root
	Args    map[string]any // coerced arguments; nil when the field has none. Do not modify.
	Info    ResolveInfo
}

// ResolveInfo describes the field being resolved. It is valid only during
// the resolver call.
type ResolveInfo struct {
	FieldName  string
	ParentType *Type
	ReturnType *Type
	FieldNodes []*Field
	Operation  *OperationDefinition
	Variables  map[string]any
	Schema     *Schema
	ex         *executor
}

// Path returns the response path of the field being resolved: string keys
// and int list indices.
func (i ResolveInfo) Path() []any {
	if i.ex == nil {
		return nil
	}
	return pathOf(i.ex.path)
}

// PanicHook is called with the value of a recovered panic, e.g. to log it.
type PanicHook func(ctx context.Context, recovered any)

type pathSeg struct {
	key   string
	index int // -1 for object keys
}

// execGroup is one response key of a collected selection set: the fields
// merged under it and their definition on the object type.
type execGroup struct {
	key      string
	fields   []*Field
	def      *FieldDef
	args     map[string]any // coerced when collected
	argsErr  error          // without fields, the collection's: the object is null
	deferred *SelectionSet  // an active @defer's fragment, in place of a field
	label    string         // the @defer's label
}

type subKey struct {
	g      *execGroup
	t      *Type
	defers bool // @defer holds fragments back (see executor.inc)
}

type executor struct {
	s         *Schema
	ctx       context.Context
	op        *OperationDefinition
	fragments map[string]*FragmentDefinition
	vars      map[string]any
	buf       []byte
	errs      []*Error
	path      []pathSeg
	sub       map[subKey][]*execGroup // collected subfields, when not shared in plans
	plans     *preparedDocument       // when set, where collected fields are shared
	event     bool                    // executing a subscription event; source is the event
	inc       *Incremental            // when set, @defer and @stream hold parts back
	pending   []*record               // parts held back so far, announced with what is being written

	// maxBytes bounds buf and the size of errs (0: no bound); past it,
	// tooLarge stops the execution. See overBudget.
	maxBytes int
	errBytes int
	sent     int // bytes of the parts written and held back, and of values made null
	tooLarge bool

	// claim, when set, is asked for the answer's bytes as they are rendered, at
	// least claimStep ahead of them (WithAnswerClaim); refused is why it said no.
	claim   AnswerClaimer
	claimed int
	refused error
}

// claimStep is how far an answer grows between two claims, and the size below
// which none is made: an answer that small is a connection's own buffers' worth.
const claimStep = 64 << 10

type answerClaimKey struct{}

// AnswerClaimer is asked for the bytes of an answer as it is rendered, before
// they are held; an execution it refuses stops with TOO_MANY_REQUESTS, answered
// with 429 over HTTP. The HTTP handler finds one in its ResponseWriter.
type AnswerClaimer interface{ ClaimAnswer(n int64) error }

// WithAnswerClaim returns ctx with c, which executions under ctx claim from.
func WithAnswerClaim(ctx context.Context, c AnswerClaimer) context.Context {
	return context.WithValue(ctx, answerClaimKey{}, c)
}

// Execute runs a query or mutation. Parse, validation and variable errors
// give a response without data; field errors give partial data. A
// subscription operation is refused: use Subscribe.
func (s *Schema) Execute(ctx context.Context, req Request) *Response {
	p := s.prepare(req.Query)
	if p.errs != nil {
		return &Response{Errors: p.errs}
	}
	op, errResp := selectOperation(p.doc, req.OperationName)
	if errResp != nil {
		return errResp
	}
	if op.Operation == Subscription {
		return &Response{Errors: []*Error{newError(codeBadUserInput, "Subscription operations cannot be executed here; subscribe over a WebSocket.", op.Pos)}}
	}
	return s.executeOperation(ctx, p, op, req.Variables, nil)
}

// selectOperation implements GetOperation (spec 6.1).
func selectOperation(doc *Document, name string) (*OperationDefinition, *Response) {
	var found *OperationDefinition
	count := 0
	for _, d := range doc.Definitions {
		op, ok := d.(*OperationDefinition)
		if !ok {
			continue
		}
		count++
		if name == "" || op.Name == name {
			found = op
		}
	}
	var msg string
	switch {
	case name == "" && count > 1:
		msg = "Must provide operation name if query contains multiple operations."
	case found == nil && name != "":
		msg = fmt.Sprintf("Unknown operation named %q.", name)
	case found == nil:
		msg = "Must provide an operation."
	default:
		return found, nil
	}
	return nil, &Response{Errors: []*Error{newError(codeBadUserInput, msg)}}
}

func (s *Schema) newExecutor(ctx context.Context, p *preparedDocument, op *OperationDefinition, vars map[string]any) *executor {
	e := &executor{s: s, ctx: ctx, op: op, vars: vars, fragments: p.fragments, maxBytes: s.Limits.MaxResponseBytes}
	e.claim, _ = ctx.Value(answerClaimKey{}).(AnswerClaimer)
	if len(op.Variables) == 0 {
		// Without variables, what collection yields and every argument are the same for
		// all executions of the operation: they are worked out once, shared.
		e.plans = p
	}
	return e
}

// executeOperation coerces variables and runs op.
func (s *Schema) executeOperation(ctx context.Context, p *preparedDocument, op *OperationDefinition, given map[string]any, coerced map[string]any) (resp *Response) {
	e, resp := s.startOperation(ctx, p, op, given, coerced)
	if resp != nil {
		return resp
	}
	return e.run(s.rootType(op.Operation), nil)
}

// startOperation coerces the variables of op and checks its cost: an executor
// for it, or the response refusing it.
func (s *Schema) startOperation(ctx context.Context, p *preparedDocument, op *OperationDefinition, given map[string]any, coerced map[string]any) (*executor, *Response) {
	vars := coerced
	if vars == nil {
		var errs []*Error
		vars, errs = coerceVariables(s, op, given)
		if errs != nil {
			return nil, &Response{Errors: errs}
		}
	}
	if s.rootType(op.Operation) == nil {
		return nil, &Response{Errors: []*Error{newError(codeValidationFailed, fmt.Sprintf("Schema is not configured for %ss.", op.Operation), op.Pos)}}
	}
	if err := s.checkCost(p, op, vars); err != nil {
		return nil, &Response{Errors: []*Error{err}}
	}
	return s.newExecutor(ctx, p, op, vars), nil
}

func (e *executor) run(root *Type, source any) (resp *Response) {
	defer func() {
		if r := recover(); r != nil {
			e.s.panicked(e.ctx, r)
			resp = &Response{Errors: append(e.errs, newError(codeInternal, "internal server error")), Data: []byte("null")}
		}
	}()
	pooled := buffers.Get().(*[]byte)
	e.buf = (*pooled)[:0]
	ok := e.executeFields(root, source, e.subfields(root, nil)) && !e.overBudget() // its last field too
	if e.tooLarge {
		// What was written is dropped whole: a cut answer would be neither
		// valid JSON nor correct under null propagation.
		e.buf, e.pending = append(e.buf[:0], "null"...), nil
		if e.refused != nil { // a request error: no data
			putBuffer(pooled, e.buf[:0])
			return &Response{Errors: []*Error{e.stopError()}}
		}
		return &Response{Errors: []*Error{e.stopError()}, Data: e.buf, pooled: pooled}
	}
	if !ok {
		e.buf, e.pending = append(e.buf[:0], "null"...), nil
	}
	return &Response{Errors: e.errs, Data: e.buf, pooled: pooled}
}

// overBudget reports whether the answer written so far is over maxBytes, and
// then marks the execution as stopped: the loops writing objects and lists
// ask before each entry, and unwind without resolving anything more.
func (e *executor) overBudget() bool {
	if !e.tooLarge && e.maxBytes > 0 && e.sent+len(e.buf)+e.errBytes > e.maxBytes {
		e.tooLarge = true
	}
	// The buffer's capacity is what it holds: append doubles it.
	if !e.tooLarge && e.claim != nil && max(len(e.buf)+claimStep, cap(e.buf)) > e.claimed && len(e.buf) >= claimStep {
		e.claimed = max(len(e.buf)+claimStep, cap(e.buf))
		if e.refused = e.claim.ClaimAnswer(int64(e.claimed)); e.refused != nil {
			e.tooLarge = true
		}
	}
	return e.tooLarge
}

// stopError is why overBudget stopped the execution.
func (e *executor) stopError() *Error {
	if e.refused != nil {
		return newError(codeTooManyRequests, capitalize(e.refused.Error())+".")
	}
	return tooLargeError(e.maxBytes)
}

func (s *Schema) panicked(ctx context.Context, r any) {
	if s.OnPanic != nil {
		s.OnPanic(ctx, r)
	}
}

// collectFields implements CollectFields (spec 6.3.2): it groups the fields of
// sets on object type t by response key, @skip and @include evaluated with vars
// (see skippedBy), leaving out the fields t lacks. For validation (static) there
// are no variable values: a condition on a variable is unknown and keeps its
// field, as do fields t lacks. With defers, a fragment under an active @defer is
// a group of its own. The error is the first directive whose arguments do not coerce.
func collectFields(schema *Schema, fragments map[string]*FragmentDefinition, t *Type, sets []*SelectionSet, vars map[string]any, static, defers bool) ([]*execGroup, error) {
	var groups []*execGroup
	var visited map[string]bool
	var failed error
	// applies reports whether a fragment on the type tc names (nil: any)
	// applies to t (DoesFragmentTypeApply).
	applies := func(tc *TypeRef) bool {
		if tc == nil {
			return true
		}
		ft := schema.types[tc.Name]
		return ft != nil && ft.isPossibleType(t)
	}
	var walk func(set *SelectionSet)
	// fragment walks a fragment's set, or holds it back under an active @defer.
	fragment := func(set *SelectionSet, ds []*Directive) {
		if defers {
			args, err := directiveArgs(schema, ds, "defer", vars)
			if failed = cmp.Or(failed, err); args["if"] == true {
				label, _ := args["label"].(string)
				groups = append(groups, &execGroup{deferred: set, label: label})
				return
			}
		}
		walk(set)
	}
	walk = func(set *SelectionSet) {
		for _, sel := range set.Selections {
			switch s := sel.(type) {
			case *Field:
				if skippedBy(schema, s.Directives, vars, &failed) {
					continue
				}
				k := s.responseKey()
				if i := slices.IndexFunc(groups, func(g *execGroup) bool { return g.key == k && g.deferred == nil }); i >= 0 {
					groups[i].fields = append(groups[i].fields, s)
				} else if def := fieldDef(schema, t, s.Name); def != nil || static {
					groups = append(groups, &execGroup{key: k, fields: []*Field{s}, def: def})
				}
			case *FragmentSpread:
				if visited[s.Name] || skippedBy(schema, s.Directives, vars, &failed) {
					continue
				}
				if visited == nil {
					visited = make(map[string]bool)
				}
				visited[s.Name] = true
				if f := fragments[s.Name]; f != nil && applies(f.TypeCondition) {
					fragment(f.SelectionSet, s.Directives)
				}
			case *InlineFragment:
				if !skippedBy(schema, s.Directives, vars, &failed) && applies(s.TypeCondition) {
					fragment(s.SelectionSet, s.Directives)
				}
			}
		}
	}
	for _, set := range sets {
		walk(set)
	}
	return groups, failed
}

// skippedBy evaluates @skip and @include with the coerced variables vars, keeping in
// failed (when not nil) the first error of an argument that does not coerce, such as a
// null variable. For validation, with no variable values, only a literal condition counts.
func skippedBy(s *Schema, ds []*Directive, vars map[string]any, failed *error) bool {
	for _, name := range [...]string{"skip", "include"} {
		args, err := directiveArgs(s, ds, name, vars)
		if failed != nil {
			*failed = cmp.Or(*failed, err)
		}
		if args["if"] == (name == "skip") {
			return true
		}
	}
	return false
}

// subfields returns the collected fields of group g's selection sets (g nil: the
// operation's) on object type t, collected once per execution, or once for all
// executions when the executor shares plans.
func (e *executor) subfields(t *Type, g *execGroup) []*execGroup {
	k := subKey{g, t, e.inc != nil}
	if e.plans != nil {
		return e.plans.plan(e.op, k, func() []*execGroup { return e.collectSubfields(t, g) })
	}
	if gs, ok := e.sub[k]; ok {
		return gs
	}
	gs := e.collectSubfields(t, g)
	if e.sub == nil {
		e.sub = make(map[subKey][]*execGroup)
	}
	e.sub[k] = gs
	return gs
}

func (e *executor) collectSubfields(t *Type, g *execGroup) []*execGroup {
	var sets []*SelectionSet
	switch {
	case g == nil:
		sets = []*SelectionSet{e.op.SelectionSet}
	case g.deferred != nil:
		sets = []*SelectionSet{g.deferred}
	default:
		for _, f := range g.fields {
			if f.SelectionSet != nil {
				sets = append(sets, f.SelectionSet)
			}
		}
	}
	gs, err := collectFields(e.s, e.fragments, t, sets, e.vars, false, e.inc != nil)
	if err != nil {
		return []*execGroup{{argsErr: err}}
	}
	for _, g := range gs {
		if g.deferred == nil {
			g.args, g.argsErr = coerceArguments(g.def.Args, g.fields[0].Arguments, e.vars)
		}
	}
	return gs
}

func pathOf(segs []pathSeg) []any {
	p := slices.Grow([]any(nil), len(segs))
	for _, s := range segs {
		if s.index >= 0 {
			p = append(p, s.index)
		} else {
			p = append(p, s.key)
		}
	}
	return p
}

func (e *executor) fieldError(err *Error, g *execGroup) {
	if err.Locations == nil {
		err.Locations = []Position{g.fields[0].Pos}
	}
	err.Path = pathOf(e.path) // nil for the operation's own fields: no path
	e.errs = append(e.errs, err)
	e.errBytes += len(err.appendJSON(nil)) // its path repeats every key above it, however long
}

// executeFields writes the object of source, of object type t; false when a
// non-null field came out null, making the object null.
func (e *executor) executeFields(t *Type, source any, groups []*execGroup) bool {
	e.buf = append(e.buf, '{')
	written := false
	for _, g := range groups {
		if e.overBudget() {
			return false
		}
		if g.deferred != nil {
			e.hold(&record{t: t, source: source, g: g, label: g.label})
			continue
		}
		if g.fields == nil {
			e.fieldError(fromResolverError(g.argsErr), g)
			return false
		}
		if written {
			e.buf = append(e.buf, ',')
		}
		written = true
		e.buf = appendString(e.buf, g.key)
		e.buf = append(e.buf, ':')
		if g.def == typenameField {
			e.buf = appendString(e.buf, t.Name)
			continue
		}
		e.path = append(e.path, pathSeg{key: g.key, index: -1})
		ok := e.executeField(t, source, g)
		e.path = e.path[:len(e.path)-1]
		if !ok {
			return false
		}
	}
	e.buf = append(e.buf, '}')
	return true
}

func (e *executor) executeField(t *Type, source any, g *execGroup) bool {
	def := g.def
	var value any
	err := g.argsErr
	if err == nil {
		value, err = e.resolve(t, source, g)
	}
	if err != nil {
		e.fieldError(fromResolverError(err), g)
		e.buf = append(e.buf, "null"...)
		return def.Type.Kind != NonNull
	}
	start, held := len(e.buf), len(e.pending)
	if e.complete(def.Type, g, value) {
		return true
	}
	if def.Type.Kind == NonNull {
		return false
	}
	e.null(start, held)
	return true
}

// null makes what was written from start null; what it drops counts as work done.
func (e *executor) null(start, held int) {
	e.sent += len(e.buf) - start
	e.buf, e.pending = append(e.buf[:start], "null"...), e.pending[:held]
}

var errPanic = NewError(codeInternal, "internal server error")

func (e *executor) resolve(t *Type, source any, g *execGroup) (v any, err error) {
	fn := g.def.resolve
	if fn == nil {
		if t == e.s.Subscription && e.event {
			return source, nil
		}
		if m, ok := source.(map[string]any); ok {
			return m[g.def.Name], nil
		}
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			e.s.panicked(e.ctx, r)
			v, err = nil, errPanic
		}
	}()
	p := e.params(t, source, g)
	p.Info.ex = e // for Path
	return fn(p)
}

// params are what a function bound to g on t is given, with source.
func (e *executor) params(t *Type, source any, g *execGroup) ResolveParams {
	return ResolveParams{Context: e.ctx, Source: source, Args: g.args, Info: ResolveInfo{FieldName: g.def.Name,
		ParentType: t, ReturnType: g.def.Type, FieldNodes: g.fields, Operation: e.op, Variables: e.vars, Schema: e.s}}
}

// complete implements CompleteValue (spec 6.4.3), writing the JSON of value.
// It returns false when an error made the value null where t allows none.
func (e *executor) complete(t *Type, g *execGroup, value any) bool {
	if t.Kind == NonNull {
		if isNil(value) {
			e.fieldError(&Error{Message: fmt.Sprintf("Cannot return null for non-nullable field %s.", g.def.Name)}, g)
			return false
		}
		return e.complete(t.OfType, g, value)
	}
	if isNil(value) {
		e.buf = append(e.buf, "null"...)
		return true
	}
	switch t.Kind {
	case List:
		return e.completeList(t, g, value)
	case Scalar, Enum:
		b, err := serialize(e.buf, t, value)
		if err != nil {
			e.fieldError(&Error{Message: err.Error()}, g)
			return false
		}
		e.buf = b
		return true
	case Object:
		return e.executeFields(t, value, e.subfields(t, g))
	case Interface, Union:
		ot, err := e.resolveType(t, value)
		if err != nil {
			e.fieldError(&Error{Message: err.Error()}, g)
			return false
		}
		return e.executeFields(ot, value, e.subfields(ot, g))
	}
	return false
}

// resolveType finds the object type of a value of the interface or union t:
// a resolver returns such a value as a map[string]any whose "__typename"
// entry names it.
func (e *executor) resolveType(t *Type, value any) (*Type, error) {
	var name string
	if m, ok := value.(map[string]any); ok {
		name, _ = m["__typename"].(string)
	}
	ot := e.s.types[name]
	if ot == nil || ot.Kind != Object {
		return nil, fmt.Errorf("Abstract type %q must resolve to an Object type at runtime; got %q.", t.Name, name)
	}
	if !t.isPossibleType(ot) {
		return nil, fmt.Errorf("Runtime Object type %q is not a possible type for %q.", name, t.Name)
	}
	return ot, nil
}

func (e *executor) completeList(t *Type, g *execGroup, value any) bool {
	items, ok := asList(value)
	if !ok {
		// graphql-js's message: the resolver's Go type is the server's business.
		e.fieldError(&Error{Message: fmt.Sprintf("Expected Iterable, but did not find one for field %q.", g.def.Name)}, g)
		return false
	}
	item := t.OfType
	n := e.streamFrom(g, item, items)
	if n < 0 {
		return false
	}
	items = items[:n]
	e.buf = append(e.buf, '[')
	for i, v := range items {
		if e.overBudget() {
			return false
		}
		if i > 0 {
			e.buf = append(e.buf, ',')
			if i%256 == 0 {
				// A long list can keep a CPU for many milliseconds, and Go preempts
				// a goroutine only after 10: yielding now and then lets the other
				// requests' goroutines in between (bench/README.md, the queue).
				runtime.Gosched()
			}
		}
		e.path = append(e.path, pathSeg{index: i})
		start, held := len(e.buf), len(e.pending)
		ok := e.complete(item, g, v)
		e.path = e.path[:len(e.path)-1]
		if !ok {
			if item.Kind == NonNull {
				return false
			}
			e.null(start, held)
		}
	}
	e.buf = append(e.buf, ']')
	return true
}

// asList turns a resolver's list value into []any. []any is used as is;
// other slices are converted, the uncommon ones by reflection.
func asList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case []map[string]any:
		return anys(l), true
	case []string:
		return anys(l), true
	case []int:
		return anys(l), true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

func anys[T any](l []T) []any {
	out := make([]any, len(l))
	for i, x := range l {
		out[i] = x
	}
	return out
}

// isNil reports whether v is nil or a nil pointer, map, func or channel.
// A nil slice is not null: Go code returns it for an empty list.
func isNil(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string, bool, int, float64, []any, []map[string]any:
		return false
	case map[string]any:
		return x == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// serialize appends the JSON of a leaf value (spec 3.5 result coercion).
func serialize(buf []byte, t *Type, v any) ([]byte, error) {
	if t.Kind == Enum {
		s, ok := v.(string)
		if !ok {
			if st, isStringer := v.(fmt.Stringer); isStringer {
				s, ok = st.String(), true
			}
		}
		if !ok || t.enumMap[s] == nil {
			return buf, fmt.Errorf("Enum %q cannot represent value: %s", t.Name, jsonText(v))
		}
		return appendString(buf, s), nil
	}
	if !t.builtin {
		if t.scalar.Serialize != nil {
			out, err := t.scalar.Serialize(v)
			if err != nil {
				return buf, err
			}
			v = out
		}
		if m, ok := v.(json.Marshaler); ok {
			b, err := m.MarshalJSON()
			if err != nil {
				return buf, err
			}
			return append(buf, b...), nil
		}
		return appendValue(buf, v), nil
	}
	switch t.Name {
	case "Int":
		n, ok := toInt64(v)
		if !ok {
			return buf, fmt.Errorf("Int cannot represent non-integer value: %s", jsonText(v))
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return buf, fmt.Errorf("Int cannot represent non 32-bit signed integer value: %d", n)
		}
		return strconv.AppendInt(buf, n, 10), nil
	case "Float":
		f, ok := toFloat64(v)
		if !ok {
			return buf, fmt.Errorf("Float cannot represent non numeric value: %s", jsonText(v))
		}
		if _, isF32 := v.(float32); isF32 {
			return appendFloat(buf, f, 32), nil
		}
		return appendFloat(buf, f, 64), nil
	case "Boolean":
		switch b := v.(type) {
		case bool:
			return strconv.AppendBool(buf, b), nil
		case *bool:
			return strconv.AppendBool(buf, *b), nil
		}
		return buf, fmt.Errorf("Boolean cannot represent a non boolean value: %s", jsonText(v))
	}
	switch s := v.(type) { // String and ID
	case string:
		return appendString(buf, s), nil
	case *string:
		return appendString(buf, *s), nil
	case []byte:
		return appendString(buf, string(s)), nil
	case bool:
		if t.Name == "String" {
			return append(strconv.AppendBool(append(buf, '"'), s), '"'), nil
		}
	case fmt.Stringer:
		return appendString(buf, s.String()), nil
	}
	if n, ok := toInt64(v); ok {
		buf = append(buf, '"')
		buf = strconv.AppendInt(buf, n, 10)
		return append(buf, '"'), nil
	}
	return buf, fmt.Errorf("%s cannot represent value: %s", t.Name, jsonText(v))
}
