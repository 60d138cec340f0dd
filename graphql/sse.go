package graphql

import (
	"context"
	"net/http"
	"time"
)

// GraphQL over Server-Sent Events: the protocol of the graphql-sse library.
// In distinct connections mode each operation is one request whose answer is
// the event stream: a next event per result, then complete. In single
// connection mode a client reserves a stream (PUT, answered with a token),
// opens it (GET with the token), and POSTs operations that name an
// extensions.operationId; their results come over the stream, each next
// event and complete carrying that id; DELETE ?operationId= stops one.

// EventStreamTokenHeader carries a single connection mode reservation's token.
const EventStreamTokenHeader = "X-GraphQL-Event-Stream-Token"

// tokenKey is EventStreamTokenHeader as net/http keys it: Header.Get would make
// that string anew for every request.
var tokenKey = http.CanonicalHeaderKey(EventStreamTokenHeader)

const codeForbidden = "FORBIDDEN"

// serve answers r when it is one of the streams' requests, and reports whether it was.
func (s *Streams) serve(w http.ResponseWriter, r *http.Request, h *Handler, accept []acceptRange) bool {
	sse := acceptsEventStream(accept)
	token := r.Header.Get(tokenKey)
	if token == "" && (r.Method == http.MethodDelete || sse) {
		token = r.URL.Query().Get("token") // EventSource sets no header
	}
	switch {
	case r.Method == http.MethodPut:
		s.reserve(w, r)
	case r.Method == http.MethodDelete || token != "" && (r.Method == http.MethodGet || r.Method == http.MethodPost):
		switch res := s.reservation(w, token); {
		case res == nil:
		case r.Method == http.MethodDelete: // stops an operation, with no complete
			res.remove(r.URL.Query().Get("operationId"), false)()
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodGet:
			s.serveReserved(w, r, res)
		default:
			s.startReserved(w, r, h, res)
		}
	case (r.Method == http.MethodGet || r.Method == http.MethodPost) && sse:
		s.serveOne(w, r, h, sseFraming{}, s.opts.KeepAlive)
	case (r.Method == http.MethodGet || r.Method == http.MethodPost) && acceptsSubscriptionSpec(accept):
		s.serveOne(w, r, h, multipartSubscription{}, s.opts.Heartbeat)
	default:
		return false
	}
	return true
}

// acceptsEventStream reports whether Accept prefers text/event-stream to every
// JSON and multipart answer: a higher quality, or the same and named first, as
// negotiate picks among equals. urql names JSON first for a query and only the
// streams for a subscription; graphql-sse clients name the event stream alone.
func acceptsEventStream(accept []acceptRange) bool {
	sse, other := 0.0, 0.0
	sseFirst := false
	for _, r := range accept {
		switch r.media {
		case "text/event-stream":
			if r.q > sse {
				sse, sseFirst = r.q, r.q > other
			}
		case mediaJSON, mediaGraphQLResponse, "multipart/mixed":
			other = max(other, r.q)
		}
	}
	return sse > 0 && (sse > other || sse == other && sseFirst)
}

// serveOne answers r, one operation, with its results streamed in format f and
// a keep-alive every interval while a subscription waits for events. Whatever
// refuses the operation is its first and only result, as the graphql-sse
// protocol has it: clients such as EventSource see nothing of an error status.
func (s *Streams) serveOne(w http.ResponseWriter, r *http.Request, h *Handler, f framing, interval time.Duration) {
	client := s.opts.ClientOf(r)
	leave, ok := s.enter(w, client)
	if !ok {
		return
	}
	defer leave()
	if !claimOrRefuse(w, s.opts.Operations, client) {
		return
	}
	defer s.opts.Operations.Release(client, 1)
	ctx, until, op, errs := s.setUp(w, r, h)
	if errs != nil {
		op = &streamOp{inc: &Incremental{Initial: &Response{Errors: errs}}} // its one result
	}
	sw := openStream(w, f, s.opts.WriteTimeout)
	if op.inc == nil {
		s.follow(ctx, sw, op, until, interval)
	} else if op.results(sw.next) {
		sw.finish()
	}
}

// setUp reads and starts the operation of r, or returns the errors that refuse it.
func (s *Streams) setUp(w http.ResponseWriter, r *http.Request, h *Handler) (context.Context, time.Time, *streamOp, ErrorList) {
	params, batch, status, msg := h.readParams(w, r)
	switch {
	case status != 0:
		return nil, time.Time{}, nil, ErrorList{newError(codeBadUserInput, msg)}
	case batch != nil:
		return nil, time.Time{}, nil, ErrorList{newError(codeBadUserInput, "A batch of operations cannot be streamed; send one operation per request.")}
	}
	ctx, until, err := s.authorize(r, h.requestContext(w, r))
	if err != nil {
		return nil, time.Time{}, nil, ErrorList{newError(codeForbidden, "Forbidden: "+err.Error())}
	}
	op, errs, _ := s.start(ctx, h, r.Method, &params)
	return ctx, until, op, errs
}

// follow writes a subscription's events as they come, with a keep-alive every
// interval, until its source ends, the client leaves, its authorization
// expires or the server shuts down. It runs in the request's goroutine: an
// idle subscriber costs no goroutine of its own.
func (s *Streams) follow(ctx context.Context, sw *streamWriter, op *streamOp, until time.Time, interval time.Duration) {
	defer op.sub.done()
	expired, stop := s.expiry(until)
	defer stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var buf []byte
	lapsed := false
	emit := func(resp *Response) bool {
		if lapsed = s.lapsed(until); lapsed {
			return false
		}
		buf = resp.appendJSON(buf[:0])
		return sw.next(buf)
	}
	ended := func() bool { // the source's last events, then complete
		if !op.sub.poll(emit) {
			return false
		}
		if lapsed {
			s.endExpired(sw)
		} else if !sw.failed && ctx.Err() == nil {
			sw.finish()
		}
		return true
	}
	for {
		select {
		case <-op.ready:
			if ended() {
				return
			}
		case <-tick.C:
			if !sw.keepAlive() {
				return
			}
		case <-expired:
			s.endExpired(sw)
			return
		case <-s.quit: // after the sources ended: their last events may be ready too
			ended()
			return
		case <-ctx.Done():
			return
		}
	}
}

// lapsed reports whether an authorization until, if any, has ended: an event
// is not sent past it, whichever comes first of the event and the timer.
func (s *Streams) lapsed(until time.Time) bool {
	return !until.IsZero() && !s.opts.Now().Before(until)
}

func (s *Streams) endExpired(sw *streamWriter) {
	sw.buf = sw.f.fail(sw.buf, "", ErrorList{newError(codeForbidden, "Forbidden: "+msgAuthorizationExpired)})
	sw.finish()
}

// sseFraming is the event stream of the graphql-sse protocol; an id is a
// single connection mode operation's.
type sseFraming struct{}

func (sseFraming) contentType() string     { return "text/event-stream; charset=utf-8" }
func (sseFraming) start(buf []byte) []byte { return buf }
func (sseFraming) end(buf []byte) []byte   { return buf }

// keepAlive is a comment line, which EventSource ignores.
func (sseFraming) keepAlive(buf []byte) []byte { return append(buf, ":\n\n"...) }

func (sseFraming) next(buf []byte, id string, result []byte) []byte {
	buf = append(buf, "event: next\ndata: "...)
	if id == "" {
		buf = append(buf, result...)
	} else {
		buf = appendString(append(buf, `{"id":`...), id)
		buf = append(append(append(buf, `,"payload":`...), result...), '}')
	}
	return append(buf, "\n\n"...)
}

// complete carries an empty data line in distinct connections mode: an event
// without one is not dispatched by EventSource.
func (sseFraming) complete(buf []byte, id string) []byte {
	buf = append(buf, "event: complete\ndata:"...)
	if id != "" {
		buf = append(appendString(append(buf, ` {"id":`...), id), '}')
	}
	return append(buf, "\n\n"...)
}

func (f sseFraming) fail(buf []byte, id string, errs ErrorList) []byte {
	return f.next(buf, id, (&Response{Errors: errs}).appendJSON(nil))
}
