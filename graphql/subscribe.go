package graphql

import (
	"context"
	"fmt"
)

// Subscribe runs a request as a subscription (spec 6.2.3). For a
// subscription operation it creates the source stream of its root field and
// returns a channel that carries one Response per event; the channel is
// closed when the source closes or ctx is cancelled. A query or mutation is
// executed at once and its single Response sent on the channel. Request
// errors (parse, validation, variables, or a failing subscriber) are
// returned as an ErrorList, with no channel.
func (s *Schema) Subscribe(ctx context.Context, req Request) (<-chan *Response, error) {
	each, err := s.subscribeEach(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make(chan *Response)
	go func() {
		defer close(out)
		each(func(resp *Response) bool {
			select {
			case out <- resp:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return out, nil
}

// subscribeEach is Subscribe for a caller that handles each Response itself:
// it checks the request and creates the source stream at once (request errors
// are returned as an ErrorList), and gives back a function that runs the
// stream in the caller's goroutine, calling yield with each Response until
// the source closes, ctx is cancelled or yield returns false. Serving many
// subscribers, this saves a goroutine and a hand-off per event.
func (s *Schema) subscribeEach(ctx context.Context, req Request) (run func(yield func(*Response) bool), err error) {
	ready := make(chan struct{}, 1)
	st, err := s.startStream(ctx, req, func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	return func(yield func(*Response) bool) {
		defer st.done()
		st.each(ready, yield)
	}, nil
}

// eventStream is a started subscription: its source stream and what turns an
// event into its Response; or, for a query or mutation, its one Response.
type eventStream struct {
	ctx     context.Context
	single  *Response  // a query's or mutation's response; the rest is unset
	src     <-chan any // a source stream's events
	queue   EventQueue // a notifying source's events (it calls startStream's notify), instead of src
	respond func(ev any) *Response
	done    func() // call once the stream is no longer read
}

// poll hands yield the Response to each event waiting on a notifying source,
// without waiting for more. It reports true when the stream has ended: the
// source closed, ctx ended or yield returned false.
func (st *eventStream) poll(yield func(*Response) bool) (ended bool) {
	for {
		if st.ctx.Err() != nil {
			return true
		}
		ev, ok, ended := st.queue.Next()
		if !ok {
			return ended
		}
		if !yield(st.respond(ev)) {
			return true
		}
	}
}

// each calls yield with the Response to each event until the stream ends (see
// poll), waiting for events on the source, or, for a notifying source, on
// ready, which its notify fills. A query's or mutation's one Response is
// yielded alone.
func (st *eventStream) each(ready <-chan struct{}, yield func(*Response) bool) {
	if st.single != nil {
		yield(st.single)
		return
	}
	for {
		if st.queue == nil {
			select {
			case <-st.ctx.Done():
				return
			case ev, ok := <-st.src:
				if !ok || !yield(st.respond(ev)) {
					return
				}
			}
			continue
		}
		if st.poll(yield) {
			return
		}
		select {
		case <-st.ctx.Done():
			return
		case <-ready:
		}
	}
}

// startStream checks req and, for a subscription, creates its source stream,
// passing notify to a notifying one (SetNotifyingSubscriber). Request errors
// are returned as an ErrorList. A query or mutation is executed at once.
func (s *Schema) startStream(ctx context.Context, req Request, notify func()) (*eventStream, error) {
	p := s.prepare(req.Query)
	if p.errs != nil {
		return nil, ErrorList(p.errs)
	}
	op, errResp := selectOperation(p.doc, req.OperationName)
	if errResp != nil {
		return nil, ErrorList(errResp.Errors)
	}
	vars, errs := coerceVariables(s, op, req.Variables)
	if errs != nil {
		return nil, ErrorList(errs)
	}
	if op.Operation != Subscription {
		return &eventStream{ctx: ctx, single: s.executeOperation(ctx, p, op, nil, vars), done: func() {}}, nil
	}
	root := s.Subscription
	if root == nil {
		return nil, ErrorList{newError(codeValidationFailed, "Schema is not configured for subscriptions.", op.Pos)}
	}
	if err := s.checkCost(p, op, vars); err != nil {
		return nil, ErrorList{err}
	}
	e := s.newExecutor(ctx, p, op, vars)
	groups := e.collect(root, []*SelectionSet{op.SelectionSet})
	if len(groups) != 1 || groups[0].def == nil || groups[0].def == typenameField {
		return nil, ErrorList{newError(codeValidationFailed, "A subscription must select exactly one top level field.", op.Pos)}
	}
	var shared *sharedStream
	leave := func() {}
	if s.ShareEventResults {
		if key, ok := shareKey(req.Query, req.OperationName, vars); ok {
			shared, leave = s.fanout.join(key)
		}
	}
	src, queue, err := s.createSourceStream(e, root, groups[0], notify)
	if err != nil {
		leave()
		return nil, err
	}
	// The caller may never read the stream: the subscriber is gone when ctx
	// ends, at the latest.
	stop := context.AfterFunc(ctx, leave)
	return &eventStream{
		ctx: ctx, src: src, queue: queue,
		respond: func(ev any) *Response {
			return shared.result(ev, func() *Response {
				ex := s.newExecutor(ctx, p, op, vars)
				ex.event = true
				return ex.run(root, ev)
			})
		},
		done: func() {
			stop()
			leave()
		},
	}, nil
}

// createSourceStream creates the source stream of the root field g: a channel,
// or the queue of a notifying source.
func (s *Schema) createSourceStream(e *executor, root *Type, g *execGroup, notify func()) (src <-chan any, queue EventQueue, err error) {
	fail := func(msg string, cause error) error {
		ge := newError("", msg, g.fields[0].Pos)
		if cause != nil {
			ge = fromResolverError(cause)
			ge.Locations = []Position{g.fields[0].Pos}
		}
		ge.Path = []any{g.key}
		return ErrorList{ge}
	}
	if g.def.subscribe == nil && g.def.subscribeNotify == nil {
		return nil, nil, fail(fmt.Sprintf("Subscription field %q has no source stream.", g.def.Name), nil)
	}
	args, err := coerceArguments(g.def.Args, g.fields[0].Arguments, e.vars)
	if err != nil {
		return nil, nil, fail("", NewError(codeBadUserInput, err.Error()))
	}
	defer func() {
		if r := recover(); r != nil {
			s.panicked(e.ctx, r)
			src, queue, err = nil, nil, fail("", errPanic)
		}
	}()
	p := ResolveParams{
		Context: e.ctx,
		Args:    args,
		Info: ResolveInfo{FieldName: g.def.Name, ParentType: root, ReturnType: g.def.Type,
			FieldNodes: g.fields, Operation: e.op, Variables: e.vars, Schema: s},
	}
	if g.def.subscribeNotify != nil {
		queue, err = g.def.subscribeNotify(p, notify)
	} else {
		src, err = g.def.subscribe(p)
	}
	if err != nil {
		return nil, nil, fail("", err)
	}
	if src == nil && queue == nil {
		return nil, nil, fail(fmt.Sprintf("Subscription field %q returned no source stream.", g.def.Name), nil)
	}
	return src, queue, nil
}
