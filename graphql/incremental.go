package graphql

import (
	"context"
	"fmt"
)

// Incremental delivery: an operation whose active @defer and @stream hold
// parts of its result back answers with an initial result, then one payload
// per deferred fragment and per streamed item, each computed after the one
// before has been handed over. A transport writes Initial, then each Next
// until it returns nil, flushing each as it comes.

// Incremental is an operation run with @defer and @stream.
type Incremental struct {
	Initial *Response
	Pending []*Pending // the parts Initial holds back, announced with it

	e      *executor
	queue  []*record
	nextID int
}

// Pending is a deferred fragment or a streamed list whose results follow.
type Pending struct {
	ID    int
	Path  []any // the object of a fragment, the list of a stream
	Label string
}

// Payload is one result after the initial one: a deferred fragment's data, or
// one streamed item. Data (or Items) is nil when an error made it null; the
// errors raised while computing it are with it.
type Payload struct {
	*Pending
	Stream  bool
	Data    []byte // a fragment's object
	Items   []byte // a stream's items, a JSON array
	Index   int    // the index of Items' first item
	Errors  []*Error
	Done    bool       // the last payload of its Pending
	Started []*Pending // the parts this payload holds back in turn
	HasNext bool
}

// record is a part held back: a fragment on an object, or a list's items from next on.
type record struct {
	*Pending
	t      *Type      // the object's type; a stream's item type
	source any        // the object
	g      *execGroup // the deferred fragment's group; the streamed field's
	path   []pathSeg
	label  string
	stream bool
	items  []any
	next   int
}

// ExecuteIncremental runs a query or mutation as Execute does, except that
// active @defer and @stream hold parts of the result back for Next.
func (s *Schema) ExecuteIncremental(ctx context.Context, req Request) *Incremental {
	if p := s.prepare(req.Query); p.errs == nil {
		if op, errResp := selectOperation(p.doc, req.OperationName); errResp == nil && op.Operation != Subscription {
			return s.executeIncremental(ctx, p, op, req.Variables)
		}
	}
	return &Incremental{Initial: s.Execute(ctx, req)} // what refuses req, as Execute words it
}

func (s *Schema) executeIncremental(ctx context.Context, p *preparedDocument, op *OperationDefinition, given map[string]any) *Incremental {
	e, resp := s.startOperation(ctx, p, op, given, nil)
	if resp != nil {
		return &Incremental{Initial: resp}
	}
	in := &Incremental{e: e}
	e.inc = in
	in.Initial = e.run(s.rootType(op.Operation), nil)
	in.Pending = in.announce()
	e.sent += len(in.Initial.Data) + e.errBytes
	return in
}

// announce gives the parts held back while writing the last result their
// ids, and queues them.
func (in *Incremental) announce() []*Pending {
	var out []*Pending
	for _, r := range in.e.pending {
		r.Pending = &Pending{ID: in.nextID, Path: pathOf(r.path), Label: r.label}
		in.nextID++
		out = append(out, r.Pending)
	}
	in.queue = append(in.queue, in.e.pending...)
	in.e.pending = nil
	return out
}

// hold keeps r for later, at the current path, counting it with the answer at once.
func (e *executor) hold(r *record) {
	r.path = append([]pathSeg(nil), e.path...)
	e.pending = append(e.pending, r)
	e.sent += partBytes(r.path)
}

// partBytes is about a part's framing and path, which repeats every key above it.
func partBytes(path []pathSeg) int { return 64 + len(appendValue(nil, pathOf(path))) }

// streamFrom returns how many of the items of g's list to complete now: all of
// them, unless an active @stream on the field (not on a list nested in its value)
// holds the rest back; -1 for a field error (bad arguments, a negative initialCount).
func (e *executor) streamFrom(g *execGroup, item *Type, items []any) int {
	if e.inc == nil || e.path[len(e.path)-1].index >= 0 {
		return len(items)
	}
	args, err := directiveArgs(e.s, g.fields[0].Directives, "stream", e.vars)
	n, _ := args["initialCount"].(int)
	if args["if"] == true && n < 0 {
		err = &Error{Message: "initialCount must be a positive integer"}
	}
	if err != nil {
		e.fieldError(fromResolverError(err), g)
		return -1
	}
	if args["if"] != true || n >= len(items) {
		return len(items)
	}
	label, _ := args["label"].(string)
	e.hold(&record{t: item, g: g, label: label, stream: true, items: items[n:], next: n})
	return n
}

// directiveArgs returns the coerced arguments of the directive name among ds
// when the schema declares it; nil when ds lacks it.
func directiveArgs(s *Schema, ds []*Directive, name string, vars map[string]any) (map[string]any, error) {
	for _, d := range ds {
		if def := s.directives[d.Name]; d.Name == name && def != nil {
			return coerceArguments(def.Args, d.Arguments, vars)
		}
	}
	return nil, nil
}

// Next computes the next payload; nil when there is none left.
func (in *Incremental) Next() *Payload {
	if len(in.queue) == 0 {
		return nil
	}
	r := in.queue[0]
	in.queue = in.queue[1:]
	e := in.e
	e.buf, e.errs, e.errBytes, e.claimed = nil, nil, 0, 0 // each part claims its own bytes
	e.path = append(e.path[:0], r.path...)
	p := &Payload{Pending: r.Pending, Stream: r.stream, Index: r.next, Done: !r.stream}
	ok := e.runRecord(r) && !e.overBudget()
	switch {
	case e.tooLarge:
		ok, p.Done, in.queue, e.pending = false, true, nil, nil
		e.errs = []*Error{e.stopError()}
	case !ok:
		e.pending, p.Done = nil, true
	case r.stream:
		p.Items = append(append([]byte{'['}, e.buf...), ']')
	default:
		p.Data = e.buf
	}
	if r.stream && !p.Done {
		r.items, r.next = r.items[1:], r.next+1
		if p.Done = len(r.items) == 0; !p.Done {
			in.queue = append(in.queue, r)
		}
	}
	p.Errors = e.errs
	e.sent += len(e.buf) + e.errBytes + partBytes(r.path)
	p.Started = in.announce()
	p.HasNext = len(in.queue) > 0
	return p
}

// runRecord writes a deferred fragment's object, or a stream's next item;
// false when an error made it null.
func (e *executor) runRecord(r *record) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			e.s.panicked(e.ctx, v)
			e.errs, ok = append(e.errs, newError(codeInternal, "internal server error")), false
		}
	}()
	if !r.stream {
		return e.executeFields(r.t, r.source, e.subfields(r.t, r.g))
	}
	e.path = append(e.path, pathSeg{index: r.next})
	if ok = e.complete(r.t, r.g, r.items[0]); !ok && r.t.Kind != NonNull {
		e.null(0, 0)
		return true
	}
	return ok
}

func tooLargeError(maxBytes int) *Error {
	err := newError(CodeResponseTooLarge, fmt.Sprintf("The response is larger than the limit of %d bytes; execution was stopped.", maxBytes))
	err.Extensions["maxResponseBytes"] = maxBytes
	return err
}

// usesIncremental reports whether op, its variables coerced, has an active @defer or
// @stream (or one whose arguments do not coerce), which only an incremental answer carries.
func usesIncremental(s *Schema, fragments map[string]*FragmentDefinition, op *OperationDefinition, vars map[string]any) bool {
	active := func(ds []*Directive, name string) bool {
		args, err := directiveArgs(s, ds, name, vars)
		return err != nil || args["if"] == true
	}
	seen := map[string]bool{}
	var in func(set *SelectionSet) bool
	in = func(set *SelectionSet) bool {
		for _, sel := range set.Selections {
			var ds []*Directive
			var sub *SelectionSet
			switch x := sel.(type) {
			case *Field:
				ds, sub = x.Directives, x.SelectionSet
			case *InlineFragment:
				ds, sub = x.Directives, x.SelectionSet
			case *FragmentSpread:
				if f := fragments[x.Name]; f != nil && !seen[x.Name] {
					seen[x.Name] = true
					ds, sub = x.Directives, f.SelectionSet
				}
			}
			if skippedBy(s, ds, vars, nil) {
				continue
			}
			if active(ds, "stream") || active(ds, "defer") || (sub != nil && in(sub)) {
				return true
			}
		}
		return false
	}
	return in(op.SelectionSet)
}
