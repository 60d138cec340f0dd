package graphql

// GraphQL over WebSocket: the graphql-transport-ws protocol of the graphql-ws
// library (its PROTOCOL.md) and the legacy protocol of
// subscriptions-transport-ws, whose subprotocol is named "graphql-ws".

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"quartet/internal/jsonkeys"
)

// The WebSocket subprotocols WebSocketHandler speaks, chosen by the client's
// Sec-WebSocket-Protocol header. When a client offers both,
// graphql-transport-ws wins.
const (
	// ProtocolTransportWS is the protocol of the graphql-ws library.
	ProtocolTransportWS = "graphql-transport-ws"
	// ProtocolLegacyWS is the protocol of the retired
	// subscriptions-transport-ws library, used by older Apollo clients.
	ProtocolLegacyWS = "graphql-ws"
)

// Close codes. The 44xx codes are graphql-transport-ws's; this handler uses
// them for the legacy protocol too, which defines none.
const (
	closeBadRequest     websocket.StatusCode = 4400
	closeUnauthorized   websocket.StatusCode = 4401
	closeForbidden      websocket.StatusCode = 4403
	closeBadSubprotocol websocket.StatusCode = 4406
	closeInitTimeout    websocket.StatusCode = 4408
	closeDuplicateID    websocket.StatusCode = 4409
	closeTooManyInits   websocket.StatusCode = 4429
	closeInternal       websocket.StatusCode = 4500
	// closeDropped records a connection ended without a close frame.
	closeDropped = websocket.StatusAbnormalClosure
	// maxCloseReason is what a close frame's 125 bytes leave for the reason.
	maxCloseReason = 123
)

// Defaults of WebSocketOptions.
const (
	defaultInitWait         = 10 * time.Second
	defaultKeepAlive        = 12 * time.Second
	defaultMaxSubscriptions = 100
	defaultSendQueue        = 64
	defaultWriteTimeout     = 10 * time.Second
)

// InitFunc admits a WebSocket connection when its connection_init message
// arrives. r is the upgrade request; r.Context() lasts as long as the
// connection. payload is the message's payload object, nil when it had
// none. The returned context, which should be derived from r.Context(), is
// the parent of the context of every operation on the connection: it
// carries the caller's identity as Handler.ContextFunc does over HTTP; nil
// means r.Context(). An error refuses the connection, and its text is sent
// to the client.
type InitFunc func(r *http.Request, payload map[string]any) (context.Context, error)

// WebSocketOptions configures a WebSocketHandler. The zero value gives the
// documented defaults.
type WebSocketOptions struct {
	// OriginPatterns lists host patterns (path.Match syntax, matched against
	// the Origin's host, or against scheme://host when the pattern has a
	// scheme) of other origins whose pages may connect. Requests from the
	// endpoint's own host and requests without an Origin header (clients
	// other than browsers) are always allowed; any other origin gets 403.
	OriginPatterns []string

	// AllowAnyOrigin turns the Origin check off, letting every web page
	// connect with its visitors' credentials. Prefer OriginPatterns.
	AllowAnyOrigin bool

	// OnInit, when set, admits or refuses connections; without it every
	// connection is admitted and operations run in the upgrade request's
	// context.
	OnInit InitFunc

	// ConnectionInitWaitTimeout bounds the wait for connection_init after
	// the upgrade: 0 means 10 s, a negative value waits forever.
	ConnectionInitWaitTimeout time.Duration

	// KeepAlive is the interval of the legacy protocol's "ka" messages and
	// of graphql-transport-ws "ping" messages; a graphql-transport-ws client
	// that sends nothing at all between two pings is dropped. 0 means 12 s,
	// a negative value sends neither.
	KeepAlive time.Duration

	// MaxSubscriptions bounds the operations active at once on one
	// connection (subscriptions, and queries and mutations until they
	// complete); 0 means 100. One more gets an error message of its own.
	MaxSubscriptions int

	// MaxTotalSubscriptions bounds the operations active at once over all
	// connections; 0 means DefaultMaxTotalSubscriptions (100,000), a
	// negative value sets no bound. One more gets an error message of its
	// own.
	MaxTotalSubscriptions int

	// MaxSubscriptionsPerClient bounds the operations active at once over
	// the connections of one client address; 0 means
	// DefaultMaxSubscriptionsPerClient (1,000), a negative value sets no
	// bound. One more gets an error message of its own. It bounds the work
	// one client makes every event cost: without it, sockets times
	// operations per socket.
	MaxSubscriptionsPerClient int

	// MaxSockets bounds the connections open at once; 0 means
	// DefaultMaxSockets (10,000), a negative value sets no bound. One more
	// is refused before the upgrade with 503 Service Unavailable.
	MaxSockets int

	// MaxSocketsPerClient bounds the connections open at once from one
	// client address (the peer's IP: clients behind one proxy or NAT share
	// it); 0 means DefaultMaxSocketsPerClient (100), a negative value sets no
	// bound. One more is refused before the upgrade with 429 Too Many
	// Requests.
	MaxSocketsPerClient int

	// Log, when set, gets a warning for each kind of refusal by the five
	// bounds above: the first at once, then a count at most every 10 s, so
	// that an attack cannot flood it.
	Log *slog.Logger

	// PersistedOnly, when set, runs only operations whose document is one of
	// its pinned ones (PinManifest): the WebSocket side of Handler.PersistedOnly.
	// Clients of graphql-ws send documents, not hashes, so the document itself
	// is looked up by its SHA-256; any other gets PERSISTED_QUERY_NOT_IN_LIST.
	PersistedOnly *PersistedQueries

	// MaxMessageBytes bounds one incoming message; 0 means MaxRequestBytes.
	// A larger message closes the connection with 1009 Message Too Big.
	MaxMessageBytes int64

	// SendQueue is how many outgoing messages wait for the socket at most
	// per connection; 0 means 64.
	SendQueue int

	// WriteTimeout bounds the wait for the socket to take one message; 0
	// means 10 s. A connection that takes longer is dropped.
	WriteTimeout time.Duration
}

func (o *WebSocketOptions) setDefaults() {
	if o.ConnectionInitWaitTimeout == 0 {
		o.ConnectionInitWaitTimeout = defaultInitWait
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = defaultKeepAlive
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = defaultMaxSubscriptions
	}
	if o.MaxTotalSubscriptions == 0 {
		o.MaxTotalSubscriptions = DefaultMaxTotalSubscriptions
	}
	if o.MaxSubscriptionsPerClient == 0 {
		o.MaxSubscriptionsPerClient = DefaultMaxSubscriptionsPerClient
	}
	if o.MaxSockets == 0 {
		o.MaxSockets = DefaultMaxSockets
	}
	if o.MaxSocketsPerClient == 0 {
		o.MaxSocketsPerClient = DefaultMaxSocketsPerClient
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = MaxRequestBytes
	}
	if o.SendQueue <= 0 {
		o.SendQueue = defaultSendQueue
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
}

// WebSocketHandler serves GraphQL operations, subscriptions above all, over
// WebSocket: set it as Handler.WebSocket.
//
// Subprotocols. A client offering graphql-transport-ws speaks it; one
// offering only graphql-ws speaks the legacy protocol. A client offering
// neither is upgraded and then closed with 4406 Subprotocol not acceptable,
// as graphql-transport-ws prescribes.
//
// graphql-transport-ws. connection_init is answered with connection_ack, or
// 4403 Forbidden when OnInit refuses; a second one closes with 4429, none
// within ConnectionInitWaitTimeout with 4408, subscribe before the ack with
// 4401 Unauthorized, a subscribe reusing an active id with 4409, and a
// message that is not JSON or not of the protocol with 4400. A subscribe
// gets a next message per result and then complete; queries and mutations
// give one next. Request errors (syntax, validation, variables, a failing
// source stream, too many operations) give one error message whose payload
// is the list of GraphQL errors. A complete from the client ends the
// operation silently. ping gets pong with the same payload.
//
// graphql-ws (legacy). connection_init is answered with connection_ack and
// a first "ka", or connection_error {"message"} and close 4403 when OnInit
// refuses. start gets data messages and then complete; request errors give
// an error message with the list of GraphQL errors; stop ends an operation
// and is answered with complete; a start reusing an active id replaces that
// operation; start before connection_ack gets an error message;
// connection_terminate closes with 1000. A message that is not JSON gets
// connection_error; one of an unknown type gets an error message. No
// connection_init within ConnectionInitWaitTimeout closes with 4408.
//
// Slow clients. Each connection has one writer and a queue of SendQueue
// messages; an operation whose results find the queue full waits, so the
// event source sees the subscriber fall behind and can end the
// subscription (with an error event, which is delivered) rather than
// blocking its publishers. A socket that takes no message for WriteTimeout
// is dropped without a close frame, which a stalled socket could not carry;
// the client sees 1006 Abnormal Closure. Nothing is buffered without bound.
//
// Limits. A connection beyond MaxSockets is refused before the upgrade with
// 503, one beyond MaxSocketsPerClient with 429, each with a plain-text
// reason. An operation beyond MaxSubscriptions, MaxSubscriptionsPerClient or
// MaxTotalSubscriptions gets an error message (GRAPHQL_VALIDATION_FAILED)
// and the connection stays open. These refusals go to Log, aggregated. A
// message beyond MaxMessageBytes closes the connection with 1009. An
// internal failure closes with 4500; Shutdown closes with 1001 Going Away.
type WebSocketHandler struct {
	schema *Schema
	opts   WebSocketOptions

	mu         sync.Mutex
	conns      map[*wsConn]struct{}
	shutdown   bool
	wg         sync.WaitGroup          // one per ServeHTTP past the shutdown check
	sockets    int                     // admitted, counted before the upgrade
	operations int                     // active over all connections
	perClient  map[string]*clientCount // by client address, none at zero
	refusals   refusalLog

	live atomic.Int64 // goroutines of live connections, for tests

	// closed, when set, is told how each connection ended; code is 0 when
	// the peer closed first. For tests.
	closed func(code websocket.StatusCode, reason string)
}

// NewWebSocketHandler returns a handler serving s over WebSocket.
func NewWebSocketHandler(s *Schema, opts WebSocketOptions) *WebSocketHandler {
	opts.setDefaults()
	return &WebSocketHandler{schema: s, opts: opts, conns: map[*wsConn]struct{}{}, perClient: map[string]*clientCount{},
		refusals: refusalLog{log: opts.Log, every: refusalLogInterval}}
}

// Counts returns the WebSockets admitted and the operations (subscriptions, in the
// main) active over all of them, for monitoring.
func (h *WebSocketHandler) Counts() (sockets, operations int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sockets, h.operations
}

// ServeHTTP upgrades r to a WebSocket and serves it until it closes.
func (h *WebSocketHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client := clientAddress(r)
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		http.Error(w, "The server is shutting down.", http.StatusServiceUnavailable)
		return
	}
	if !h.admitSocket(w, client) {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()
	defer h.releaseSocket(client)

	hw := &hijackRecorder{ResponseWriter: w}
	ws, err := websocket.Accept(hw, r, &websocket.AcceptOptions{
		Subprotocols:       []string{ProtocolTransportWS, ProtocolLegacyWS},
		OriginPatterns:     h.opts.OriginPatterns,
		InsecureSkipVerify: h.opts.AllowAnyOrigin,
	})
	if err != nil {
		return // Accept has answered
	}
	ws.SetReadLimit(h.opts.MaxMessageBytes)
	h.live.Add(1)
	defer h.live.Add(-1)
	c := newWSConn(h, ws, hw.conn, r)
	c.client, c.coalescer = client, hw.out

	h.mu.Lock()
	h.conns[c] = struct{}{}
	late := h.shutdown
	h.mu.Unlock()
	if late {
		c.goAway()
	}
	c.serve()
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
}

// Shutdown refuses new connections with 503 and closes every open one with
// 1001 Going Away, after the messages already queued on it (call it after
// ending the event sources, so that their last events go out first). It
// returns when every connection has ended, or with ctx.Err() when ctx ends
// first, having dropped the connections that remain.
func (h *WebSocketHandler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.shutdown = true
	conns := make([]*wsConn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.goAway()
	}
	h.refusals.close()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	h.mu.Lock()
	for c := range h.conns {
		c.raw.Close() // ends every read and write at once
	}
	h.mu.Unlock()
	<-done
	return ctx.Err()
}

// hijackRecorder keeps the connection that websocket.Accept hijacks, so
// that it can be closed without waiting for a close handshake, and puts a
// coalescer under the library's writer.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
	out  *coalescer
}

func (w *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return conn, brw, err
	}
	w.conn = conn
	w.out = &coalescer{conn: conn}
	// The response to the upgrade has gone out: the writer holds nothing.
	return conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.out, brw.Writer.Size())), nil
}

func (w *hijackRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wsConn is one WebSocket connection. The reader goroutine (ServeHTTP's)
// parses messages and starts operations; each operation has a goroutine that
// queues its results; one writer goroutine sends the queue.
type wsConn struct {
	h   *WebSocketHandler
	ws  *websocket.Conn
	raw net.Conn // under ws
	// coalescer is between ws and raw: the writer sends what is queued
	// together.
	coalescer *coalescer
	r         *http.Request // the upgrade request, with ctx as its context
	client    string        // its address, as the caps count it
	legacy    bool
	ctx       context.Context
	cancel    context.CancelFunc

	out      chan outMsg
	queued   atomic.Int64  // messages in out not yet written
	writing  sync.Mutex    // held while a message is written; see send
	dead     chan struct{} // closed when nothing more will be sent
	deadOnce sync.Once
	wg       sync.WaitGroup // goroutines other than the reader
	reads    atomic.Uint64  // messages received, for the keep-alive check
	acked    atomic.Bool

	// Reader state.
	initReceived bool
	initTimer    *time.Timer
	draining     bool // a close is queued: ignore further messages

	mu          sync.Mutex
	base        context.Context // parent of operation contexts, set at the ack
	ops         map[string]*wsOp
	closing     bool
	closeCode   websocket.StatusCode
	closeReason string
}

// wsOp is an active operation.
type wsOp struct {
	id     string
	cancel context.CancelFunc
	// stopped is set when the client ends the operation: results still in
	// the queue are then not sent.
	stopped atomic.Bool
}

// outMsg is an entry of the send queue: a message, a result, or a close.
type outMsg struct {
	data []byte
	// A result of op is framed only when it is written, into a pooled
	// buffer: a response shared by many subscribers is then never copied
	// per subscriber, but for the write itself.
	result     *Response
	resultType string // "next", or the legacy "data"
	op         *wsOp  // the operation the message belongs to, if any
	close      websocket.StatusCode
	reason     string
}

func newWSConn(h *WebSocketHandler, ws *websocket.Conn, raw net.Conn, r *http.Request) *wsConn {
	ctx, cancel := context.WithCancel(r.Context())
	return &wsConn{
		h:      h,
		ws:     ws,
		raw:    raw,
		r:      r.WithContext(ctx),
		legacy: ws.Subprotocol() == ProtocolLegacyWS,
		ctx:    ctx,
		cancel: cancel,
		out:    make(chan outMsg, h.opts.SendQueue),
		dead:   make(chan struct{}),
		ops:    map[string]*wsOp{},
	}
}

// serve runs the connection until the socket closes, then waits for every
// goroutine it started.
func (c *wsConn) serve() {
	defer c.teardown()
	if c.ws.Subprotocol() == "" {
		c.closeNow(closeBadSubprotocol, "Subprotocol not acceptable")
		return
	}
	c.spawn(c.writeLoop)
	if d := c.h.opts.ConnectionInitWaitTimeout; d > 0 {
		c.wg.Add(1)
		c.h.live.Add(1)
		c.initTimer = time.AfterFunc(d, func() {
			defer c.h.live.Add(-1)
			defer c.wg.Done()
			c.closeNow(closeInitTimeout, "Connection initialisation timeout")
		})
	}
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			return
		}
		c.reads.Add(1)
		if c.draining {
			continue
		}
		if !c.handle(data) {
			return
		}
	}
}

// handle acts on one message and reports whether to go on reading.
func (c *wsConn) handle(data []byte) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.h.schema.panicked(c.ctx, r)
			c.closeNow(closeInternal, "Internal server error")
			ok = false
		}
	}()
	if c.legacy {
		return c.handleLegacy(data)
	}
	return c.handleTransport(data)
}

func (c *wsConn) handleTransport(data []byte) bool {
	m, err := parseWSMessage(data)
	if err != nil {
		return c.badRequest(err.Error())
	}
	switch m.typ {
	case "connection_init":
		if c.initReceived {
			c.closeNow(closeTooManyInits, "Too many initialisation requests")
			return false
		}
		c.initReceived = true
		c.stopInitTimer()
		payload, err := initPayload(m.payload)
		if err != nil {
			return c.badRequest(err.Error())
		}
		ctx, err := c.init(payload)
		if err != nil {
			if errors.Is(err, errInitPanic) {
				c.closeNow(closeInternal, "Internal server error")
			} else {
				c.closeNow(closeForbidden, "Forbidden: "+err.Error())
			}
			return false
		}
		c.admit(ctx)
		return c.send(outMsg{data: []byte(`{"type":"connection_ack"}`)})
	case "ping":
		if m.payload != nil && !isJSONObject(m.payload) {
			return c.badRequest(`"ping" payload must be an object`)
		}
		if m.payload != nil {
			return c.send(outMsg{data: append(append([]byte(`{"type":"pong","payload":`), m.payload...), '}')})
		}
		return c.send(outMsg{data: []byte(`{"type":"pong"}`)})
	case "pong":
		if m.payload != nil && !isJSONObject(m.payload) {
			return c.badRequest(`"pong" payload must be an object`)
		}
		return true
	case "subscribe":
		if m.id == "" {
			return c.badRequest(`"subscribe" needs a non-empty string id`)
		}
		req, err := parseOperation(m.payload)
		if err != nil {
			return c.badRequest(err.Error())
		}
		if !c.acked.Load() {
			c.closeNow(closeUnauthorized, "Unauthorized")
			return false
		}
		c.mu.Lock()
		_, dup := c.ops[m.id]
		c.mu.Unlock()
		if dup {
			c.closeNow(closeDuplicateID, "Subscriber for "+m.id+" already exists")
			return false
		}
		return c.start(m.id, req)
	case "complete":
		if m.id == "" {
			return c.badRequest(`"complete" needs a non-empty string id`)
		}
		c.stop(m.id)
		return true
	}
	return c.badRequest(fmt.Sprintf("unexpected message type %q", m.typ))
}

func (c *wsConn) handleLegacy(data []byte) bool {
	m, err := parseWSMessage(data)
	if err != nil {
		return c.connectionError(err.Error())
	}
	switch m.typ {
	case "connection_init":
		if c.initReceived {
			return c.connectionError("Too many initialisation requests")
		}
		c.initReceived = true
		c.stopInitTimer()
		payload, err := initPayload(m.payload)
		if err != nil {
			return c.refuse(err.Error(), closeBadRequest, "Invalid message received")
		}
		ctx, err := c.init(payload)
		if err != nil {
			if errors.Is(err, errInitPanic) {
				return c.refuse("Internal server error", closeInternal, "Internal server error")
			}
			return c.refuse(err.Error(), closeForbidden, "Forbidden: "+err.Error())
		}
		c.admit(ctx)
		if !c.send(outMsg{data: []byte(`{"type":"connection_ack"}`)}) {
			return false
		}
		if c.h.opts.KeepAlive > 0 {
			return c.send(outMsg{data: []byte(`{"type":"ka"}`)})
		}
		return true
	case "connection_terminate":
		c.closeNow(websocket.StatusNormalClosure, "")
		return false
	case "start":
		if m.id == "" {
			return c.connectionError(`"start" needs a non-empty string id`)
		}
		if !c.acked.Load() {
			return c.sendErrors(m.id, nil, ErrorList{newError("", "The connection must be initialised with connection_init first.")})
		}
		req, err := parseOperation(m.payload)
		if err != nil {
			return c.sendErrors(m.id, nil, ErrorList{newError(CodeBadUserInput, err.Error())})
		}
		c.mu.Lock()
		old := c.ops[m.id]
		delete(c.ops, m.id)
		c.mu.Unlock()
		if old != nil {
			old.stopped.Store(true)
			old.cancel()
		}
		return c.start(m.id, req)
	case "stop":
		if m.id == "" {
			return c.connectionError(`"stop" needs a non-empty string id`)
		}
		if c.stop(m.id) {
			return c.send(outMsg{data: opMessage("complete", m.id, nil)})
		}
		return true
	}
	msg := fmt.Sprintf("Invalid message type %q", m.typ)
	if m.id == "" {
		return c.connectionError(msg)
	}
	return c.sendErrors(m.id, nil, ErrorList{newError("", msg)})
}

// badRequest closes a graphql-transport-ws connection on a message that is
// not of the protocol.
func (c *wsConn) badRequest(detail string) bool {
	c.closeNow(closeBadRequest, "Invalid message received: "+detail)
	return false
}

// connectionError sends the legacy connection_error message.
func (c *wsConn) connectionError(msg string) bool {
	return c.send(outMsg{data: connectionErrorMessage(msg)})
}

// refuse sends the legacy connection_error and then closes.
func (c *wsConn) refuse(msg string, code websocket.StatusCode, reason string) bool {
	c.draining = true
	if !c.connectionError(msg) {
		return false
	}
	c.send(outMsg{close: code, reason: reason})
	return true // read on, so that the close handshake completes
}

var errInitPanic = errors.New("OnInit panicked")

// init runs OnInit.
func (c *wsConn) init(payload map[string]any) (ctx context.Context, err error) {
	if c.h.opts.OnInit == nil {
		return c.ctx, nil
	}
	defer func() {
		if r := recover(); r != nil {
			c.h.schema.panicked(c.ctx, r)
			ctx, err = nil, errInitPanic
		}
	}()
	ctx, err = c.h.opts.OnInit(c.r, payload)
	if err == nil && ctx == nil {
		ctx = c.ctx
	}
	return ctx, err
}

// admit makes ctx the parent of the connection's operations.
func (c *wsConn) admit(ctx context.Context) {
	c.mu.Lock()
	c.base = ctx
	c.mu.Unlock()
	c.acked.Store(true)
}

// start begins the operation id, unless too many are active.
func (c *wsConn) start(id string, req Request) bool {
	if pq := c.h.opts.PersistedOnly; pq != nil && !pq.isPinned(sha256.Sum256([]byte(req.Query))) {
		return c.sendErrors(id, nil, ErrorList{newError(CodePersistedQueryNotInList, msgNotInList)})
	}
	if refused := c.admitOperation(); refused != "" {
		return c.sendErrors(id, nil, ErrorList{newError(CodeValidationFailed, refused)})
	}
	c.mu.Lock()
	ctx, cancel := context.WithCancel(c.base)
	op := &wsOp{id: id, cancel: cancel}
	c.ops[id] = op
	c.mu.Unlock()
	c.spawn(func() {
		defer c.h.releaseOperation(c.client)
		c.run(ctx, op, req)
	})
	return true
}

// stop ends the operation id at the client's request and reports whether
// it was active.
func (c *wsConn) stop(id string) bool {
	c.mu.Lock()
	op := c.ops[id]
	delete(c.ops, id)
	c.mu.Unlock()
	if op == nil {
		return false
	}
	op.stopped.Store(true)
	op.cancel()
	return true
}

// run executes an operation and queues its results.
func (c *wsConn) run(ctx context.Context, op *wsOp, req Request) {
	defer op.cancel()
	each, err := c.h.schema.SubscribeEach(ctx, req)
	if err != nil {
		c.forget(op)
		c.sendErrors(op.id, op, errorList(err))
		return
	}
	next := "next"
	if c.legacy {
		next = "data"
	}
	gone := false
	each(func(resp *Response) bool {
		gone = !c.send(outMsg{result: resp, resultType: next, op: op})
		return !gone
	})
	if gone {
		return // the connection is gone; its teardown cancels ctx
	}
	// The stream ended: the source closed, or ctx ended because the client
	// stopped the operation or the connection is going.
	c.forget(op)
	if !op.stopped.Load() && c.ctx.Err() == nil {
		c.send(outMsg{data: opMessage("complete", op.id, nil), op: op})
	}
}

// forget removes op from the active operations, freeing its id.
func (c *wsConn) forget(op *wsOp) {
	c.mu.Lock()
	if c.ops[op.id] == op {
		delete(c.ops, op.id)
	}
	c.mu.Unlock()
}

func (c *wsConn) sendErrors(id string, op *wsOp, errs ErrorList) bool {
	payload := []byte{'['}
	for i, e := range errs {
		if i > 0 {
			payload = append(payload, ',')
		}
		payload = e.appendJSON(payload)
	}
	payload = append(payload, ']')
	return c.send(outMsg{data: opMessage("error", id, payload), op: op})
}

// send sends m, or queues it, waiting for room; it reports false when the
// connection will send nothing more.
//
// When nothing is queued and no one is writing, m is written at once by the
// calling goroutine: an event for ten thousand subscribers then costs ten
// thousand writes, not also ten thousand hand-offs to writer goroutines. Each
// goroutine's messages still go out in order: m is written directly only when
// everything queued before it has been written.
func (c *wsConn) send(m outMsg) bool {
	if m.close == 0 && c.writing.TryLock() {
		if c.queued.Load() == 0 {
			ok := c.writeMessage(m)
			c.writing.Unlock()
			if !ok {
				c.markDead()
			}
			return ok
		}
		c.writing.Unlock()
	}
	c.queued.Add(1)
	select {
	case c.out <- m:
		return true
	case <-c.dead:
		c.queued.Add(-1)
		return false
	}
}

// writeMessage writes one queued or directly sent message, and reports false when
// the connection will send nothing more. The caller holds c.writing.
func (c *wsConn) writeMessage(m outMsg) bool {
	if m.close != 0 {
		c.closeNow(m.close, m.reason)
		return false
	}
	if c.isClosing() {
		return false // a close has been sent or is under way
	}
	if m.op != nil && m.op.stopped.Load() {
		return true
	}
	if m.result != nil {
		return c.writeResult(m.resultType, m.op.id, m.result)
	}
	return c.write(m.data)
}

// writeQueue writes m and whatever else is queued by then, in one system
// call as far as it goes; it reports false when the connection will send
// nothing more. A close is written alone, after what came before it is
// sent: the close handshake waits for the peer. The caller holds c.writing.
func (c *wsConn) writeQueue(m outMsg) bool {
	held := false
	ok := true
	for {
		if m.close == 0 && !held && len(c.out) > 0 {
			c.coalescer.hold()
			held = true
		}
		if m.close != 0 && held {
			held = false
			if ok = c.release(); !ok {
				c.queued.Add(-1)
				return false
			}
		}
		ok = c.writeMessage(m)
		c.queued.Add(-1)
		if !ok || len(c.out) == 0 {
			break
		}
		m = <-c.out // only this goroutine takes from the queue
	}
	if held {
		return c.release() && ok
	}
	return ok
}

// release sends what the coalescer holds, within WriteTimeout.
func (c *wsConn) release() bool {
	err := c.coalescer.release(c.h.opts.WriteTimeout)
	if err == nil {
		return true
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.drop("Write timeout: the client does not keep up")
	} else if !c.isClosing() {
		c.raw.Close()
	}
	return false
}

// writeResult writes {"id":…,"type":…,"payload":resp}, framed in a pooled
// buffer that is free again once written.
func (c *wsConn) writeResult(typ, id string, resp *Response) bool {
	bp := frameBuffers.Get().(*[]byte)
	buf := appendOpHeader((*bp)[:0], typ, id)
	buf = append(buf, `,"payload":`...)
	buf = resp.AppendJSON(buf)
	buf = append(buf, '}')
	ok := c.write(buf) // the library has sent or copied buf when it returns
	*bp = buf
	if cap(buf) <= maxPooledFrame {
		frameBuffers.Put(bp)
	}
	return ok
}

// frameBuffers recycles the buffers results are framed in.
var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledFrame is the largest frame buffer kept for reuse: a large one
// would pin its memory while small results pass through it.
const maxPooledFrame = 64 << 10

// writeLoop sends the queue, and the keep-alive messages.
func (c *wsConn) writeLoop() {
	defer c.markDead()
	var tick <-chan time.Time
	if d := c.h.opts.KeepAlive; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	pinged, readsAtPing := false, uint64(0)
	for {
		select {
		case m := <-c.out:
			c.writing.Lock()
			ok := c.writeQueue(m)
			c.writing.Unlock()
			if !ok {
				return
			}
		case <-tick:
			if !c.acked.Load() {
				continue
			}
			if c.legacy {
				if !c.lockAndWrite([]byte(`{"type":"ka"}`)) {
					return
				}
				continue
			}
			if pinged && c.reads.Load() == readsAtPing {
				c.drop("No answer to ping")
				return
			}
			pinged, readsAtPing = true, c.reads.Load()
			if !c.lockAndWrite([]byte(`{"type":"ping"}`)) {
				return
			}
		case <-c.dead:
			return
		}
	}
}

// write sends one message within WriteTimeout. The caller holds c.writing,
// which keeps the deadline its own. The bound is a deadline on the socket,
// not a context: a context per message would cost a timer and allocations
// for each of thousands of subscribers. It is cleared after the write, for
// the close handshake writes under a context of its own.
func (c *wsConn) write(p []byte) bool {
	c.raw.SetWriteDeadline(time.Now().Add(c.h.opts.WriteTimeout))
	err := c.ws.Write(context.Background(), websocket.MessageText, p)
	c.raw.SetWriteDeadline(time.Time{})
	if err == nil {
		return true
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.drop("Write timeout: the client does not keep up")
	case !c.isClosing():
		c.raw.Close() // a broken socket; the reader ends too
	}
	return false
}

// lockAndWrite is write for a caller that does not hold c.writing.
func (c *wsConn) lockAndWrite(p []byte) bool {
	c.writing.Lock()
	defer c.writing.Unlock()
	return c.write(p)
}

// closeNow closes the socket with a close handshake, unless a close is
// already under way; it returns when the handshake is over.
func (c *wsConn) closeNow(code websocket.StatusCode, reason string) {
	reason = limitReason(reason)
	if c.recordClose(code, reason) {
		c.ws.Close(code, reason)
	}
}

// drop closes the socket without a close handshake.
func (c *wsConn) drop(reason string) {
	c.recordClose(closeDropped, reason)
	c.raw.Close()
}

// goAway closes the connection with 1001 after what is queued, or at once
// when the queue is full.
func (c *wsConn) goAway() {
	c.queued.Add(1)
	select {
	case c.out <- outMsg{close: websocket.StatusGoingAway, reason: "Going away"}:
	default:
		c.queued.Add(-1)
		// Not c.spawn: teardown may be waiting already. Shutdown calls
		// this before it waits for h.wg, and ServeHTTP holds a count.
		c.h.wg.Add(1)
		go func() {
			defer c.h.wg.Done()
			c.closeNow(websocket.StatusGoingAway, "Going away")
		}()
	}
}

func (c *wsConn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

func (c *wsConn) recordClose(code websocket.StatusCode, reason string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.closing, c.closeCode, c.closeReason = true, code, reason
	return true
}

// spawn runs f in a goroutine that teardown waits for.
func (c *wsConn) spawn(f func()) {
	c.wg.Add(1)
	c.h.live.Add(1)
	go func() {
		defer c.h.live.Add(-1)
		defer c.wg.Done()
		f()
	}()
}

func (c *wsConn) markDead() { c.deadOnce.Do(func() { close(c.dead) }) }

func (c *wsConn) stopInitTimer() {
	if c.initTimer != nil && c.initTimer.Stop() {
		c.wg.Done()
		c.h.live.Add(-1)
	}
	c.initTimer = nil
}

// teardown ends every operation and waits for the connection's goroutines.
func (c *wsConn) teardown() {
	c.stopInitTimer()
	c.mu.Lock()
	ops := c.ops
	c.ops = nil
	c.mu.Unlock()
	for _, op := range ops {
		op.cancel()
	}
	c.cancel()
	c.markDead()
	// The reader is done: the peer's close frame has come (and the library
	// has answered it) or the socket has failed. Closing the TCP connection
	// now, as RFC 6455 has the server do, also ends a close handshake under
	// way in another goroutine, which would otherwise wait for frames that
	// the reader has consumed.
	c.raw.Close()
	c.ws.CloseNow()
	c.wg.Wait()
	if c.h.closed != nil {
		c.mu.Lock()
		code, reason := c.closeCode, c.closeReason
		c.mu.Unlock()
		c.h.closed(code, reason)
	}
}

// wsMessage is an incoming message.
type wsMessage struct {
	typ     string
	id      string          // "" when absent
	payload json.RawMessage // nil when absent or null
}

// parseWSMessage reads the envelope shared by both protocols. Keys are
// matched exactly, unlike encoding/json's struct decoding. A key repeated
// anywhere in the message (the envelope, the payload, its variables) makes
// the message ambiguous, since encoding/json would silently keep the last,
// so it is refused; so are envelope keys differing only in case.
func parseWSMessage(data []byte) (wsMessage, error) {
	var m wsMessage
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return m, errors.New("not a JSON object")
	}
	if err := jsonkeys.Check(data); err != nil {
		return m, err // the JSON is valid, so err names the repeated key
	}
	raw, ok := fields["type"]
	if !ok {
		return m, errors.New("no type")
	}
	if json.Unmarshal(raw, &m.typ) != nil || m.typ == "" {
		return m, errors.New("type must be a non-empty string")
	}
	if raw, ok := fields["id"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &m.id) != nil {
			return m, errors.New("id must be a string")
		}
	}
	if raw, ok := fields["payload"]; ok && !isNull(raw) {
		m.payload = raw
	}
	return m, nil
}

// parseOperation reads the payload of subscribe (or legacy start).
func parseOperation(payload json.RawMessage) (Request, error) {
	var req Request
	var fields map[string]json.RawMessage
	if payload == nil || json.Unmarshal(payload, &fields) != nil || fields == nil {
		return req, errors.New("payload must be an object")
	}
	if raw, ok := fields["query"]; !ok || json.Unmarshal(raw, &req.Query) != nil {
		return req, errors.New("payload.query must be a string")
	}
	if raw, ok := fields["operationName"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &req.OperationName) != nil {
			return req, errors.New("payload.operationName must be a string")
		}
	}
	if raw, ok := fields["variables"]; ok && !isNull(raw) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if !isJSONObject(raw) || d.Decode(&req.Variables) != nil {
			return req, errors.New("payload.variables must be an object")
		}
	}
	if raw, ok := fields["extensions"]; ok && !isNull(raw) && !isJSONObject(raw) {
		return req, errors.New("payload.extensions must be an object")
	}
	return req, nil
}

// initPayload decodes a connection_init payload.
func initPayload(raw json.RawMessage) (map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	var p map[string]any
	if !isJSONObject(raw) || json.Unmarshal(raw, &p) != nil {
		return nil, errors.New(`"connection_init" payload must be an object`)
	}
	return p, nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// isJSONObject reports whether raw, a valid JSON value, is an object.
func isJSONObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

// opMessage builds {"id":…,"type":…,"payload":…}, leaving out a nil payload.
func opMessage(typ, id string, payload []byte) []byte {
	buf := appendOpHeader(make([]byte, 0, len(payload)+len(id)+40), typ, id)
	if payload != nil {
		buf = append(buf, `,"payload":`...)
		buf = append(buf, payload...)
	}
	return append(buf, '}')
}

func appendOpHeader(buf []byte, typ, id string) []byte {
	buf = append(buf, `{"id":`...)
	buf = appendString(buf, id)
	buf = append(buf, `,"type":`...)
	return appendString(buf, typ)
}

func connectionErrorMessage(msg string) []byte {
	buf := appendString([]byte(`{"type":"connection_error","payload":{"message":`), msg)
	return append(buf, "}}"...)
}

// errorList gives the GraphQL errors of a failed request.
func errorList(err error) ErrorList {
	var list ErrorList
	if errors.As(err, &list) {
		return list
	}
	return ErrorList{fromResolverError(err)}
}

// limitReason makes s a valid close reason: UTF-8 (browsers fail the
// connection otherwise) cut on a rune boundary to what a close frame holds.
func limitReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxCloseReason {
		return s
	}
	i := maxCloseReason
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
