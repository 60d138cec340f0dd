package graphql

import (
	"context"
	"fmt"
)

// Subscribe runs a request as a subscription (spec 6.2.3): the channel carries
// one Response per event of its root field's source stream and is closed when
// the source ends or ctx is cancelled. A query or mutation is executed at once
// and its one Response sent. Request errors are returned as an ErrorList.
func (s *Schema) Subscribe(ctx context.Context, req Request) (<-chan *Response, error) {
	run, err := s.subscribeEach(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make(chan *Response)
	go func() {
		defer close(out)
		run(func(resp *Response) bool {
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

// subscribeEach is Subscribe run in the caller's goroutine: run calls yield
// with each Response until the stream ends or yield returns false.
func (s *Schema) subscribeEach(ctx context.Context, req Request) (run func(yield func(*Response) bool), err error) {
	ready := make(chan struct{}, 1)
	st, err := s.startStream(ctx, req, func() { wake(ready) })
	if err != nil {
		return nil, err
	}
	return func(yield func(*Response) bool) {
		if st.single != nil {
			yield(st.single)
			return
		}
		defer st.done()
		for !st.poll(yield) {
			select {
			case <-ctx.Done():
				return
			case <-ready:
			}
		}
	}, nil
}

// eventStream is a started subscription; or, for a query or mutation, its one
// Response (single), the rest unset.
type eventStream struct {
	ctx     context.Context
	single  *Response
	queue   EventQueue
	respond func(ev any) *Response
	done    func() // call once the stream is no longer read
}

// poll hands yield the Response to each event waiting, without waiting for
// more. It reports true when the stream has ended: the source ended, ctx
// ended or yield returned false.
func (st *eventStream) poll(yield func(*Response) bool) (ended bool) {
	for st.ctx.Err() == nil {
		ev, ok, ended := st.queue.Next()
		if !ok {
			return ended
		}
		if !yield(st.respond(ev)) {
			return true
		}
	}
	return true
}

// startStream checks req and, for a subscription, creates its source stream,
// which calls notify when it has events. A query or mutation is executed at
// once. Request errors are returned as an ErrorList.
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
		return &eventStream{single: s.executeOperation(ctx, p, op, nil, vars)}, nil
	}
	root := s.Subscription
	if root == nil {
		return nil, ErrorList{newError(codeValidationFailed, "Schema is not configured for subscriptions.", op.Pos)}
	}
	if err := s.checkCost(p, op, vars); err != nil {
		return nil, ErrorList{err}
	}
	e := s.newExecutor(ctx, p, op, vars)
	groups := e.collectSubfields(root, nil)
	if len(groups) == 1 && groups[0].fields == nil { // its @skip or @include does not coerce
		return nil, ErrorList{fromResolverError(groups[0].argsErr)}
	}
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
	queue, err := s.createSourceStream(e, root, groups[0], notify)
	if err != nil {
		leave()
		return nil, err
	}
	// The caller may never read the stream: the subscriber is gone when ctx
	// ends, at the latest.
	stop := context.AfterFunc(ctx, leave)
	return &eventStream{
		ctx: ctx, queue: queue,
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

func (s *Schema) createSourceStream(e *executor, root *Type, g *execGroup, notify func()) (queue EventQueue, err error) {
	fail := func(msg string, cause error) error {
		ge := newError("", msg, g.fields[0].Pos)
		if cause != nil {
			ge = fromResolverError(cause)
			ge.Locations = []Position{g.fields[0].Pos}
		}
		ge.Path = []any{g.key}
		return ErrorList{ge}
	}
	if g.def.subscribe == nil {
		return nil, fail(fmt.Sprintf("Subscription field %q has no source stream.", g.def.Name), nil)
	}
	if g.argsErr != nil {
		return nil, fail("", g.argsErr)
	}
	defer func() {
		if r := recover(); r != nil {
			s.panicked(e.ctx, r)
			queue, err = nil, fail("", errPanic)
		}
	}()
	queue, err = g.def.subscribe(e.params(root, nil, g), notify)
	if err != nil {
		return nil, fail("", err)
	}
	if queue == nil {
		return nil, fail(fmt.Sprintf("Subscription field %q returned no source stream.", g.def.Name), nil)
	}
	return queue, nil
}
