package graphql

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Streams serves the answers that stay open over plain HTTP: GraphQL over
// Server-Sent Events (sse.go) and Apollo's multipart subscriptions
// (multipart_subscribe.go). Set it as Handler.Streams. Its streams count
// against the same budgets as the WebSockets, so a client's sockets and
// streams share one cap.
type Streams struct {
	schema *Schema
	opts   StreamOptions

	mu           sync.Mutex
	reservations map[string]*reservation
	shutdown     bool
	quit         chan struct{} // closed by Shutdown
	wg           sync.WaitGroup
}

// StreamOptions configures Streams; the zero value gives the defaults.
type StreamOptions struct {
	// Sockets counts each open stream and each reservation, Operations each
	// operation running on one, by client; give the WebSocketHandler's.
	Sockets, Operations Budget
	// Answers counts single connection mode events not yet written; nil: none.
	Answers Budget
	// ClientOf names the client a request comes from; nil: its RemoteAddr's host.
	ClientOf func(*http.Request) string
	// Authorize admits a stream as WebSocketOptions.OnInit admits a
	// connection, called with a nil payload; a context marked with
	// AuthorizedUntil ends the stream at that instant. nil admits every one.
	Authorize InitFunc
	// Now is the clock AuthorizedUntil instants are read on; nil: time.Now.
	Now func() time.Time

	// KeepAlive is the interval of SSE comments; 0 means 12 s.
	KeepAlive time.Duration
	// Heartbeat is the interval of the empty multipart parts Apollo's clients
	// expect; 0 means 5 s.
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a stream; 0 means 10 s. A reader slower
	// than that loses its stream.
	WriteTimeout time.Duration
	// SendQueue is how many events wait for a single connection mode stream
	// at most; 0 means 64. Operations wait while it is full.
	SendQueue int
	// ReservationTimeout is how long a reservation waits for its stream; 0
	// means 30 s.
	ReservationTimeout time.Duration
	// MaxOperations bounds the operations active at once on one reservation;
	// 0 means 100.
	MaxOperations int
}

// NewStreams returns the streams of s.
func NewStreams(s *Schema, opts StreamOptions) *Streams {
	wsDefaults := WebSocketOptions{ClientOf: opts.ClientOf, Sockets: opts.Sockets, Operations: opts.Operations, Now: opts.Now}
	wsDefaults.setDefaults()
	opts.ClientOf, opts.Sockets, opts.Operations, opts.Now = wsDefaults.ClientOf, wsDefaults.Sockets, wsDefaults.Operations, wsDefaults.Now
	opts.KeepAlive = positiveOr(opts.KeepAlive, 12*time.Second)
	opts.Heartbeat = positiveOr(opts.Heartbeat, 5*time.Second)
	opts.WriteTimeout = positiveOr(opts.WriteTimeout, 10*time.Second)
	opts.ReservationTimeout = positiveOr(opts.ReservationTimeout, 30*time.Second)
	opts.Answers = cmp.Or[Budget](opts.Answers, unbounded{})
	opts.SendQueue = positiveOr(opts.SendQueue, 64)
	opts.MaxOperations = positiveOr(opts.MaxOperations, 100)
	return &Streams{schema: s, opts: opts, reservations: map[string]*reservation{}, quit: make(chan struct{})}
}

func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Shutdown refuses new streams and reservations with 503 and ends the open
// ones (end the event sources first, so that their last events go out). It
// returns when every stream has ended, or with ctx.Err() when ctx ends first.
func (s *Streams) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.shutdown {
		s.shutdown = true
		close(s.quit)
	}
	reserved := slices.Collect(maps.Values(s.reservations))
	s.mu.Unlock()
	for _, r := range reserved {
		s.closeReserved(r)
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enter admits one stream or reservation of client's: it claims from Sockets,
// or answers the refusal. leave undoes it.
func (s *Streams) enter(w http.ResponseWriter, client string) (leave func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		refuseUpgrade(w, http.StatusServiceUnavailable, "", "The server is shutting down.")
		return nil, false
	}
	if !claimOrRefuse(w, s.opts.Sockets, client) {
		return nil, false
	}
	s.wg.Add(1)
	return func() {
		s.opts.Sockets.Release(client, 1)
		s.wg.Done()
	}, true
}

// claimOrRefuse claims one from b for client, or answers the refusal: 429
// when the client has its share, 503 when the server has all it takes.
func claimOrRefuse(w http.ResponseWriter, b Budget, client string) bool {
	err := b.Claim(client, 1)
	if err == nil {
		return true
	}
	status := http.StatusServiceUnavailable
	var pc interface{ ByClient() bool }
	if errors.As(err, &pc) && pc.ByClient() {
		status = http.StatusTooManyRequests
	}
	refuseUpgrade(w, status, codeTooManyRequests, capitalize(err.Error())+".")
	return false
}

// authorize runs Authorize for r; until is zero when the authorization does not end.
func (s *Streams) authorize(r *http.Request, ctx context.Context) (context.Context, time.Time, error) {
	if s.opts.Authorize == nil {
		return ctx, time.Time{}, nil
	}
	actx, err := s.opts.Authorize(r.WithContext(ctx), nil)
	if err != nil {
		return nil, time.Time{}, err
	}
	if actx == nil {
		actx = ctx
	}
	until, _ := authorizedUntil(actx)
	if !until.IsZero() && !until.After(s.opts.Now()) {
		return nil, time.Time{}, errAuthorizationExpired
	}
	return actx, until, nil
}

// expiry returns a channel that receives at until; nil (never) for the zero
// time. stop releases its timer.
func (s *Streams) expiry(until time.Time) (c <-chan time.Time, stop func()) {
	if until.IsZero() {
		return nil, func() {}
	}
	t := time.NewTimer(until.Sub(s.opts.Now()))
	return t.C, func() { t.Stop() }
}

// streamOp is an operation set up to run on a stream: a subscription's event
// stream, or a query's or mutation's incremental execution.
type streamOp struct {
	sub   *eventStream
	ready chan struct{} // has a value when sub has events
	inc   *Incremental
}

// start sets up the operation of params, or returns the errors that refuse it,
// with the status GraphQL over HTTP gives them.
func (s *Streams) start(ctx context.Context, h *Handler, method string, params *httpParams) (*streamOp, ErrorList, int) {
	req, p, op, errs, status, _ := h.operation(method, params, true)
	if errs != nil {
		return nil, errs, max(status, http.StatusBadRequest)
	}
	if op.Operation != Subscription {
		return &streamOp{inc: s.schema.executeIncremental(ctx, p, op, req.Variables)}, nil, 0
	}
	o := &streamOp{ready: make(chan struct{}, 1)}
	st, err := s.schema.startStream(ctx, req, func() { wake(o.ready) })
	if err != nil {
		return nil, errorList(err), http.StatusBadRequest
	}
	o.sub = st
	return o, nil, 0
}

// results hands emit the JSON of each result of a query or mutation, in the
// 2022-08-24 incremental format when parts were held back; false when emit
// refused one.
func (o *streamOp) results(emit func(result []byte) bool) bool {
	bp := buffers.Get().(*[]byte)
	defer func() { putBuffer(bp, *bp) }()
	in := o.inc
	if len(in.Pending) == 0 {
		*bp = in.Initial.appendJSON((*bp)[:0])
	} else {
		*bp = in.appendInitial((*bp)[:0], format20220824)
	}
	in.Initial.release()
	if !emit(*bp) {
		return false
	}
	for p := in.Next(); p != nil; p = in.Next() {
		if *bp = p.appendJSON((*bp)[:0], format20220824); !emit(*bp) {
			return false
		}
	}
	return true
}

// events hands emit the JSON of each event of a subscription until its source
// or ctx ends (true), or emit refuses one (false); at quit, those the source
// has sent, true if it has ended. It waits on o.ready, so it is for a
// goroutine of the operation's own.
func (o *streamOp) events(ctx context.Context, quit <-chan struct{}, emit func(result []byte) bool) bool {
	defer o.sub.done()
	ok := true
	yield := func(resp *Response) bool {
		ok = emit(resp.appendJSON(nil))
		return ok
	}
	for !o.sub.poll(yield) {
		select {
		case <-ctx.Done():
			return true
		case <-quit:
			return o.sub.poll(yield) && ok
		case <-o.ready:
		}
	}
	return ok
}

// streamWriter writes one streamed answer, each event flushed as written, each
// write bounded by a deadline.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	f       framing
	timeout time.Duration
	buf     []byte
	failed  bool
}

// framing is a transport's wire format of events.
type framing interface {
	contentType() string
	start(buf []byte) []byte
	next(buf []byte, id string, result []byte) []byte
	complete(buf []byte, id string) []byte
	fail(buf []byte, id string, errs ErrorList) []byte // an error that ends the operation
	keepAlive(buf []byte) []byte
	end(buf []byte) []byte
}

// openStream sends the headers of a streamed answer in format f.
func openStream(w http.ResponseWriter, f framing, timeout time.Duration) *streamWriter {
	h := w.Header()
	h.Set("Content-Type", f.contentType())
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx would buffer the events otherwise
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), f: f, timeout: timeout}
	// The server's read and write timeouts are for requests, not for a stream
	// that lasts: the deadline of each write bounds it instead.
	sw.rc.SetReadDeadline(time.Time{})
	sw.buf = f.start(sw.buf)
	sw.flush()
	return sw
}

// flush writes what is framed and reports whether the client took it.
func (sw *streamWriter) flush() bool {
	if sw.failed {
		return false
	}
	sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	_, err := sw.w.Write(sw.buf)
	if err == nil {
		err = sw.rc.Flush()
	}
	sw.buf = sw.buf[:0]
	sw.failed = err != nil
	return !sw.failed
}

func (sw *streamWriter) next(result []byte) bool {
	sw.buf = sw.f.next(sw.buf, "", result)
	return sw.flush()
}

func (sw *streamWriter) keepAlive() bool {
	sw.buf = sw.f.keepAlive(sw.buf)
	return sw.flush()
}

// finish writes the end of the operation and of the answer.
func (sw *streamWriter) finish() {
	sw.buf = sw.f.end(sw.f.complete(sw.buf, ""))
	sw.flush()
}
