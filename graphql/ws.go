package graphql

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"quartet/internal/clientaddr"
)

// GraphQL over WebSocket: the graphql-transport-ws protocol of the graphql-ws
// library (its PROTOCOL.md) and the legacy protocol of
// subscriptions-transport-ws, whose subprotocol is named "graphql-ws".
//
// This file holds the handler: its options, the upgrade and the shutdown.
// One connection's life is in wsconn.go, the two protocols' messages in
// wsprotocol.go, the send queue and its writer in wssend.go, and the caps on
// sockets and operations in wscaps.go.

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
//
// When what admitted the connection expires, a bearer token say, OnInit
// marks the context it returns with AuthorizedUntil.
type InitFunc func(r *http.Request, payload map[string]any) (context.Context, error)

// AuthorizedUntil returns ctx marked as authorizing a WebSocket connection
// until t. When OnInit returns such a context, the connection is closed with
// 4403 Forbidden at t, read on WebSocketOptions.Now's clock, and from t on
// nothing is written to it and no message from it is acted on: whatever
// admitted the connection would be refused by then, and a subscription's
// events would otherwise keep coming to a caller no longer allowed to read
// them. A context marked with a t already past refuses the connection.
func AuthorizedUntil(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, authorizedUntilKey{}, t)
}

type authorizedUntilKey struct{}

// authorizedUntil is the instant AuthorizedUntil set on ctx, if any.
func authorizedUntil(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(authorizedUntilKey{}).(time.Time)
	return t, ok
}

// msgAuthorizationExpired is what a connection closed at its
// AuthorizedUntil instant is told.
const msgAuthorizationExpired = "authorization expired"

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

	// Now is the clock AuthorizedUntil instants are read on: the one that
	// decided them, so that a connection ends when what admitted it would be
	// refused. nil means time.Now.
	Now func() time.Time

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
	// that an attack cannot flood it. It also gets a line when a connection
	// ends, with how long it was open and the server's close code, if the
	// server closed it.
	Log *slog.Logger

	// PersistedOnly, when set, runs only operations whose document is one of
	// its pinned ones (PinManifest): the WebSocket side of Handler.PersistedOnly.
	// Clients of graphql-ws send documents, not hashes, so the document itself
	// is looked up by its SHA-256; any other gets PERSISTED_QUERY_NOT_IN_LIST.
	PersistedOnly *PersistedQueries

	// MaxMessageBytes bounds one incoming message; 0 means maxRequestBytes (1 MiB).
	// A larger message closes the connection with 1009 Message Too Big.
	MaxMessageBytes int64

	// SendQueue is how many outgoing messages wait for the socket at most
	// per connection; 0 means 64.
	SendQueue int

	// WriteTimeout bounds the wait for the socket to take one write; 0
	// means 10 s. A connection that takes longer is dropped, within a tenth
	// of WriteTimeout (at most a second) more.
	WriteTimeout time.Duration

	// ClientWork, when set, runs work, the setting up of one of client's
	// operations (parsing, validation, and a query's or mutation's execution),
	// and returns nil; or returns why it did not run it: ctx ended, or the
	// client has too much waiting already, which the operation gets as its
	// error. A server gives it a client's share of the CPUs that its other
	// requests share too. Within the handler, a client's operations are set
	// up one at a time whether it is set or not.
	ClientWork func(ctx context.Context, client string, work func()) error
}

func (o *WebSocketOptions) setDefaults() {
	if o.ConnectionInitWaitTimeout == 0 {
		o.ConnectionInitWaitTimeout = defaultInitWait
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = defaultKeepAlive
	}
	if o.Now == nil {
		o.Now = time.Now
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
		o.MaxMessageBytes = maxRequestBytes
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
// Expiry. A connection whose OnInit context carries AuthorizedUntil is
// closed with 4403 Forbidden at that instant, its subscriptions with it and
// without a complete message each: a graphql-ws client retries a 4403,
// running its connectionParams again, and subscribes anew. Under the legacy
// protocol a connection_error comes first, as when connection_init is
// refused; its client, which ignores close codes, reconnects when it is set
// to and starts its operations again. From that instant on no message is
// written or acted on, whenever the close gets to go out.
//
// Slow clients. Each connection has one writer and a queue of SendQueue
// messages; an operation whose results find the queue full waits, so the
// event source sees the subscriber fall behind and can end the
// subscription (with an error event, which is delivered) rather than
// blocking its publishers. A socket that takes one write for WriteTimeout
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
	writeCheck *time.Timer // runs checkWrites while there are connections
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

// ServeHTTP upgrades r to a WebSocket and returns; the connection is served
// in a goroutine of its own until it closes. net/http's goroutine for the
// request, whose stack the request's handling made deep, then ends rather
// than wait on the socket all its life: with thousands of sockets open, its
// stack was the largest thing each of them held (bench/README.md).
func (h *WebSocketHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client := clientaddr.Of(r.RemoteAddr) // IPv6: its /64, so that one host is one client
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		refuseUpgrade(w, http.StatusServiceUnavailable, "", "The server is shutting down.")
		return
	}
	cc := h.admitSocket(w, client)
	if cc == nil {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	served := false
	defer func() {
		if !served {
			h.releaseSocket(client)
			h.wg.Done()
		}
	}()

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
	c := newWSConn(h, ws, hw.conn, r)
	c.client, c.turn, c.coalescer = client, cc.turn, hw.out

	h.mu.Lock()
	h.conns[c] = struct{}{}
	if h.writeCheck == nil {
		h.writeCheck = time.AfterFunc(h.writeCheckInterval(), h.checkWrites)
	}
	late := h.shutdown
	h.mu.Unlock()
	if late {
		c.goAway()
	}
	served = true
	go func() {
		defer h.wg.Done()
		defer h.releaseSocket(client)
		defer h.live.Add(-1)
		c.serve()
		h.mu.Lock()
		delete(h.conns, c)
		h.mu.Unlock()
	}()
}

// checkWrites drops the connections whose socket has taken one write for
// WriteTimeout (coalescer.writingFor), and runs again after
// writeCheckInterval while connections remain.
func (h *WebSocketHandler) checkWrites() {
	var stuck []*wsConn
	h.mu.Lock()
	for c := range h.conns {
		if c.coalescer.writingFor() >= h.opts.WriteTimeout {
			stuck = append(stuck, c)
		}
	}
	if len(h.conns) > 0 {
		h.writeCheck.Reset(h.writeCheckInterval())
	} else {
		h.writeCheck = nil
	}
	h.mu.Unlock()
	for _, c := range stuck {
		c.drop("Write timeout: the client does not keep up")
	}
}

// writeCheckInterval is how often checkWrites looks: a stalled socket is
// dropped within WriteTimeout and this.
func (h *WebSocketHandler) writeCheckInterval() time.Duration {
	return min(h.opts.WriteTimeout/10, time.Second)
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
	// The library reads and writes the socket through the buffers it gets.
	// net/http's are 4 KiB each, made for HTTP; a socket's messages are
	// mostly small, and a server holds thousands of sockets, so the library
	// gets smaller ones and net/http's are left to the collector. What
	// net/http read past the upgrade request stays first in line, buffered
	// as it was (the library keeps only what its reader has buffered). The
	// response to the upgrade has gone out: net/http's writer holds nothing.
	bw := bufio.NewWriterSize(w.out, wsBufferSize)
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	if len(pending) > wsBufferSize { // a client that sent much before the 101
		return conn, bufio.NewReadWriter(brw.Reader, bw), nil
	}
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(pending)), conn), wsBufferSize)
	br.Peek(len(pending)) // reads only from pending
	return conn, bufio.NewReadWriter(br, bw), nil
}

// wsBufferSize is the size of a socket's read and write buffers. A larger
// message passes them in more than one piece; a write holding several
// messages is joined by the coalescer, under them.
const wsBufferSize = 1024

func (w *hijackRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
