package graphql

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The caps on sockets and operations, and the log of what they refuse.
// Sockets are counted before the upgrade, so a refused one costs an HTTP
// answer and no goroutine; operations before their goroutine starts.

// Defaults of the caps in WebSocketOptions.
const (
	DefaultMaxSockets                = 10_000
	DefaultMaxSocketsPerClient       = 100
	DefaultMaxTotalSubscriptions     = 100_000
	DefaultMaxSubscriptionsPerClient = 1_000
)

// clientCount is what one client address holds.
type clientCount struct {
	sockets, operations int
	// turn is held while one of the client's messages is handled or operations
	// set up: a client sending on a hundred sockets at once takes one CPU, and
	// other clients still find one.
	turn chan struct{}
}

// refusalLogInterval is the least time between two log lines about one kind
// of refusal: an attack logs a line and a count, not a line per refusal.
const refusalLogInterval = 10 * time.Second

// refuseUpgrade answers an upgrade request as GraphQL over HTTP answers a
// request it does not run. A refusal for want of room (code set) may be tried
// again a second later.
func refuseUpgrade(w http.ResponseWriter, status int, code, message string) {
	if code != "" {
		w.Header().Set("Retry-After", "1")
	}
	writeResponse(w, mediaJSON, status, &Response{Errors: []*Error{newError(code, message)}})
}

// admitSocket counts a socket from client and returns the client's count, or
// answers with 503 or 429 and returns nil. The caller holds h.mu.
func (h *WebSocketHandler) admitSocket(w http.ResponseWriter, client string) *clientCount {
	if max := h.opts.MaxSockets; max > 0 && h.sockets >= max {
		h.refusals.add(refusedSockets, client, max)
		refuseUpgrade(w, http.StatusServiceUnavailable, codeTooManyRequests, "Too many WebSocket connections: the server takes "+strconv.Itoa(max)+" at most. Try again later.")
		return nil
	}
	cc := h.perClient[client]
	if max := h.opts.MaxSocketsPerClient; max > 0 && cc != nil && cc.sockets >= max {
		h.refusals.add(refusedClientSockets, client, max)
		refuseUpgrade(w, http.StatusTooManyRequests, codeTooManyRequests, "Too many WebSocket connections from "+client+": at most "+strconv.Itoa(max)+" may be open at once.")
		return nil
	}
	if cc == nil {
		cc = &clientCount{turn: make(chan struct{}, 1)}
		h.perClient[client] = cc
	}
	h.sockets++
	cc.sockets++
	return cc
}

// admitOperation counts an operation about to start on c, or returns why it
// is refused. Only c's reader starts operations, so c's count cannot rise
// meanwhile.
func (c *wsConn) admitOperation() (refused string) {
	h := c.h
	c.mu.Lock()
	active := len(c.ops)
	c.mu.Unlock()
	if max := h.opts.MaxSubscriptions; active >= max {
		h.refusals.add(refusedSocketOperations, c.client, max)
		return "Too many operations on this connection: at most " + strconv.Itoa(max) + " may be active at once."
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cc := h.perClient[c.client] // the socket's own count keeps it
	if max := h.opts.MaxSubscriptionsPerClient; max > 0 && cc.operations >= max {
		h.refusals.add(refusedClientOperations, c.client, max)
		return "Too many operations from " + c.client + ": at most " + strconv.Itoa(max) + " may be active at once over its connections."
	}
	if max := h.opts.MaxTotalSubscriptions; max > 0 && h.operations >= max {
		h.refusals.add(refusedOperations, c.client, max)
		return "Too many operations on the server: at most " + strconv.Itoa(max) + " may be active at once over all connections. Try again later."
	}
	h.operations++
	cc.operations++
	return ""
}

func (h *WebSocketHandler) releaseSocket(client string)    { h.release(client, 1, 0) }
func (h *WebSocketHandler) releaseOperation(client string) { h.release(client, 0, 1) }

// release uncounts sockets and operations admitted for client, and forgets a
// client that holds nothing.
func (h *WebSocketHandler) release(client string, sockets, operations int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cc := h.perClient[client]
	h.sockets -= sockets
	h.operations -= operations
	cc.sockets -= sockets
	cc.operations -= operations
	if cc.sockets <= 0 && cc.operations <= 0 {
		delete(h.perClient, client)
	}
}

// refusal is a kind of refusal, logged apart from the others.
type refusal int

const (
	refusedSockets refusal = iota
	refusedClientSockets
	refusedSocketOperations
	refusedClientOperations
	refusedOperations
	refusalKinds
)

var refusalMessages = [refusalKinds]string{
	refusedSockets:          "graphql websocket refused: too many sockets",
	refusedClientSockets:    "graphql websocket refused: too many sockets from one client address",
	refusedSocketOperations: "graphql websocket operation refused: too many on one socket",
	refusedClientOperations: "graphql websocket operation refused: too many from one client address",
	refusedOperations:       "graphql websocket operation refused: too many over all sockets",
}

// refusalLog logs refusals at most once per interval and kind: the first at
// once, the ones after it as a count when the interval is over.
type refusalLog struct {
	log   *slog.Logger // nil: nothing is logged
	every time.Duration

	mu     sync.Mutex
	kinds  [refusalKinds]refusalCount
	closed bool // by Shutdown
}

type refusalCount struct {
	logged time.Time   // when the last line was written
	held   int         // refusals since, not logged yet
	client string      // the last of them
	limit  int         // the bound they met
	flush  *time.Timer // logs held when the interval is over
}

func (l *refusalLog) add(k refusal, client string, limit int) {
	if l.log == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	c := &l.kinds[k]
	c.held++
	c.client, c.limit = client, limit
	if since := time.Since(c.logged); since >= l.every {
		l.writeLocked(k)
	} else if c.flush == nil {
		c.flush = time.AfterFunc(l.every-since, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if !l.closed {
				l.kinds[k].flush = nil
				l.writeLocked(k)
			}
		})
	}
}

// writeLocked logs the refusals of kind k held so far, if any. The caller
// holds l.mu.
func (l *refusalLog) writeLocked(k refusal) {
	c := &l.kinds[k]
	if c.held == 0 {
		return
	}
	l.log.Warn(refusalMessages[k], "refused", c.held, "limit", c.limit, "last_client", c.client)
	c.held, c.logged = 0, time.Now()
}

// close logs what is held and stops the timers: nothing is logged after
// Shutdown.
func (l *refusalLog) close() {
	if l.log == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for k := range l.kinds {
		if t := l.kinds[k].flush; t != nil {
			t.Stop()
			l.kinds[k].flush = nil
		}
		l.writeLocked(refusal(k))
	}
}
