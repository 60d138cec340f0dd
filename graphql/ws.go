package graphql

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// GraphQL over WebSocket: the handler. A connection's life is in wsconn.go,
// each protocol in its own file behind the interface of wsprotocol.go.

// The subprotocols served; a client offering both gets graphql-transport-ws.
const (
	// ProtocolTransportWS is the protocol of the graphql-ws library.
	ProtocolTransportWS = "graphql-transport-ws"
	// ProtocolLegacyWS is subscriptions-transport-ws's, of older Apollo clients.
	ProtocolLegacyWS = "graphql-ws"
)

// Close codes: graphql-transport-ws's, used for the legacy protocol too.
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

// InitFunc admits a WebSocket connection when its connection_init arrives. r
// is the upgrade request, whose context lasts as long as the connection;
// payload is the message's payload, nil when it had none. The returned
// context (nil: r.Context()) is the parent of every operation's context; mark
// it with AuthorizedUntil when what admitted the connection expires. An error
// refuses the connection, and its text is sent to the client.
type InitFunc func(r *http.Request, payload map[string]any) (context.Context, error)

// AuthorizedUntil returns ctx marked as authorizing a WebSocket connection
// until t, read on WebSocketOptions.Now's clock. Returned by OnInit, it closes
// the connection with 4403 Forbidden at t, and from t on nothing is written to
// it or acted on; a t already past refuses the connection.
func AuthorizedUntil(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, authorizedUntilKey{}, t)
}

type authorizedUntilKey struct{}

func authorizedUntil(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(authorizedUntilKey{}).(time.Time)
	return t, ok
}

const msgAuthorizationExpired = "authorization expired"

// WebSocketOptions configures a WebSocketHandler; the zero value gives the
// defaults. The sizes take their default for any value below 1.
type WebSocketOptions struct {
	// OriginPatterns lists host patterns (path.Match syntax, against the
	// Origin's host, or scheme://host when the pattern has a scheme) of other
	// origins that may connect. The endpoint's own host and requests without
	// an Origin are always allowed; any other origin gets 403.
	OriginPatterns []string
	// AllowAnyOrigin turns the Origin check off. Prefer OriginPatterns.
	AllowAnyOrigin bool
	// OnInit admits or refuses connections; nil admits every one, its
	// operations running in the upgrade request's context.
	OnInit InitFunc
	// Now is the clock AuthorizedUntil instants are read on; nil: time.Now.
	Now func() time.Time
	// ConnectionInitWaitTimeout bounds the wait for connection_init: 0 means
	// 10 s, a negative value waits forever.
	ConnectionInitWaitTimeout time.Duration
	// KeepAlive is the interval of legacy "ka" and graphql-transport-ws
	// "ping" messages; a client that sends nothing between two pings is
	// dropped. 0 means 12 s, a negative value sends neither.
	KeepAlive time.Duration
	// MaxSubscriptions bounds the operations active at once on one connection
	// (subscriptions, and queries and mutations until they complete); 0 means
	// 100. One past it gets an error message; the connection stays open.
	MaxSubscriptions int
	// Sockets, Operations and Answers count the connections open, the
	// operations active over them and the bytes of the messages queued for
	// them, by client address; nil bounds none. A claim refused refuses the
	// connection before the upgrade (429 when the error has ByClient() true,
	// else 503), the operation (an error message) or the message (close 1013).
	Sockets, Operations, Answers Budget
	// ClientOf names the client a request comes from, as the budgets and
	// ClientSlot count clients; nil: its RemoteAddr's host.
	ClientOf func(*http.Request) string
	// Log, when set, gets a line when a connection ends.
	Log *slog.Logger
	// PersistedOnly, when set, runs only the documents pinned in it (found by
	// their SHA-256); any other gets PERSISTED_QUERY_NOT_IN_LIST.
	PersistedOnly *PersistedQueries
	// MaxMessageBytes bounds one incoming message; 0 means 1 MiB. A larger
	// one closes the connection with 1009 Message Too Big.
	MaxMessageBytes int64
	// SendQueue bounds the outgoing messages waiting per connection; 0 means 64.
	SendQueue int
	// WriteTimeout bounds the wait for the socket to take one write; 0 means
	// 10 s. A slower connection is dropped without a close frame (1006) within
	// a tenth of it (at most a second) more.
	WriteTimeout time.Duration
	// ClientSlot, when set, waits for one of client's work slots, in which a
	// message is handled or an operation set up, and returns the function that
	// gives it back; or why it did not (ctx ended, or the client has too much
	// waiting): an operation gets it as its error, a message closes with 1013.
	ClientSlot func(ctx context.Context, client string) (release func(), err error)
}

func (o *WebSocketOptions) setDefaults() {
	o.ConnectionInitWaitTimeout = cmp.Or(o.ConnectionInitWaitTimeout, 10*time.Second)
	o.KeepAlive = cmp.Or(o.KeepAlive, 12*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClientOf == nil {
		o.ClientOf = func(r *http.Request) string {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			return host
		}
	}
	o.Sockets = cmp.Or[Budget](o.Sockets, unbounded{})
	o.Operations = cmp.Or[Budget](o.Operations, unbounded{})
	o.Answers = cmp.Or[Budget](o.Answers, unbounded{})
	o.MaxSubscriptions = positiveOr(o.MaxSubscriptions, 100)
	o.MaxMessageBytes = positiveOr(o.MaxMessageBytes, maxRequestBytes)
	o.SendQueue = positiveOr(o.SendQueue, 64)
	o.WriteTimeout = positiveOr(o.WriteTimeout, 10*time.Second)
}

// WebSocketHandler serves GraphQL operations, subscriptions above all, over
// WebSocket: set it as Handler.WebSocket. A client offering neither protocol
// is closed with 4406 Subprotocol not acceptable, an internal failure with 4500.
//
// At an AuthorizedUntil instant the connection is closed with 4403, after a
// connection_error under the legacy protocol, its subscriptions without a
// complete each: clients then reconnect, authorizing anew.
//
// Slow clients: each connection has one writer and a queue of SendQueue
// messages; a source whose subscriber falls behind can end its stream with an
// error event, which is delivered. Nothing is buffered without bound.
type WebSocketHandler struct {
	schema *Schema
	opts   WebSocketOptions

	mu         sync.Mutex
	conns      map[*wsConn]struct{}
	writeCheck *time.Timer // runs checkWrites while there are connections
	shutdown   bool
	wg         sync.WaitGroup // one per ServeHTTP past the shutdown check

	// For tests: the goroutines of live connections, and, when set, a
	// function told how each connection ended (code 0: the peer closed first).
	live   atomic.Int64
	closed func(code websocket.StatusCode, reason string)
}

// NewWebSocketHandler returns a handler serving s over WebSocket.
func NewWebSocketHandler(s *Schema, opts WebSocketOptions) *WebSocketHandler {
	opts.setDefaults()
	return &WebSocketHandler{schema: s, opts: opts, conns: map[*wsConn]struct{}{}}
}

// ServeHTTP upgrades r to a WebSocket served in a goroutine of its own, and
// returns: net/http's goroutine, whose stack the request made deep, ends
// rather than wait on the socket all its life (bench/README.md).
func (h *WebSocketHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client := h.opts.ClientOf(r)
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		refuseUpgrade(w, http.StatusServiceUnavailable, "", "The server is shutting down.")
		return
	}
	// Claimed before the upgrade: a refused socket costs no goroutine.
	if !claimOrRefuse(w, h.opts.Sockets, client) {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	served := false
	defer func() { // also when Accept or the setup below panics: the counts go back
		if !served {
			h.opts.Sockets.Release(client, 1)
			h.wg.Done()
		}
	}()
	hw := &hijackRecorder{ResponseWriter: w}
	ws, err := websocket.Accept(hw, r, &websocket.AcceptOptions{
		Subprotocols:       []string{ProtocolTransportWS, ProtocolLegacyWS},
		OriginPatterns:     h.opts.OriginPatterns,
		InsecureSkipVerify: h.opts.AllowAnyOrigin,
	})
	if err != nil { // Accept has answered
		return
	}
	ws.SetReadLimit(h.opts.MaxMessageBytes)
	h.live.Add(1)
	c := newWSConn(h, ws, hw.out, r, client)
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
		defer h.opts.Sockets.Release(client, 1)
		defer h.live.Add(-1)
		c.serve()
		h.mu.Lock()
		delete(h.conns, c)
		h.mu.Unlock()
	}()
}

// checkWrites drops the connections whose socket has taken one write for
// WriteTimeout, and runs again while connections remain: one timer for the
// handler, not a deadline per message.
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

func (h *WebSocketHandler) writeCheckInterval() time.Duration {
	return min(h.opts.WriteTimeout/10, time.Second)
}

// Shutdown refuses new connections with 503 and closes every open one with
// 1001 Going Away after the messages queued on it (end the event sources
// first, so that their last events go out). It returns when every connection
// has ended, or with ctx.Err() when ctx ends first, having dropped the rest.
func (h *WebSocketHandler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.shutdown = true
	conns := slices.Collect(maps.Keys(h.conns))
	h.mu.Unlock()
	for _, c := range conns {
		c.goAway()
	}
	dropRest := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for c := range h.conns {
			c.raw.Close() // ends every read and write at once
		}
	})
	h.wg.Wait()
	if dropRest() { // ctx had not ended
		return nil
	}
	return ctx.Err()
}

// hijackRecorder keeps the connection websocket.Accept hijacks, so that it
// can be closed without a close handshake, and puts a coalescer under the
// library's writer.
type hijackRecorder struct {
	http.ResponseWriter
	out *coalescer // over the hijacked connection
}

func (w *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return conn, brw, err
	}
	w.out = &coalescer{conn: conn}
	// The library gets buffers of wsBufferSize rather than net/http's 4 KiB
	// ones: a server holds thousands of sockets of mostly small messages.
	// What net/http read past the upgrade request stays first in line.
	bw := bufio.NewWriterSize(w.out, wsBufferSize)
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	if len(pending) > wsBufferSize { // a client that sent much before the 101
		return conn, bufio.NewReadWriter(brw.Reader, bw), nil
	}
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(pending)), conn), wsBufferSize)
	br.Peek(len(pending)) // reads only from pending
	return conn, bufio.NewReadWriter(br, bw), nil
}

const wsBufferSize = 1024

// Budget counts what a client holds: its sockets, operations or answer bytes
// (internal/admission keeps them); a refusal's message is shown to the client.
type Budget interface {
	Claim(client string, n int64) error
	Release(client string, n int64)
}

// unbounded is the Budget of a handler given none.
type unbounded struct{}

func (unbounded) Claim(string, int64) error { return nil }
func (unbounded) Release(string, int64)     {}

// refuseUpgrade answers an upgrade request as GraphQL over HTTP answers a
// request it does not run. A refusal for want of room (code set) may be tried
// again a second later.
func refuseUpgrade(w http.ResponseWriter, status int, code, message string) {
	if code != "" {
		w.Header().Set("Retry-After", "1")
	}
	writeResponse(w, mediaJSON, status, &Response{Errors: []*Error{newError(code, message)}})
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
