package graphql

import (
	"net/http"
	"strconv"
)

// Budget is what the WebSocket handler claims a client's sockets and operations
// from (internal/admission keeps it); a refusal's message is shown to the client.
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

// admitSocket claims a socket of client's before the upgrade, so a refused one
// costs an HTTP answer and no goroutine: 429 when the client has its share, 503
// when the server has all it takes.
func (h *WebSocketHandler) admitSocket(w http.ResponseWriter, client string) bool {
	return claimOrRefuse(w, h.opts.Sockets, client)
}

// admitOperation claims an operation about to start on c, or returns why it is
// refused. Only c's reader starts operations, so c's count cannot rise meanwhile.
func (c *wsConn) admitOperation() (refused string) {
	c.mu.Lock()
	active := len(c.ops)
	c.mu.Unlock()
	if max := c.h.opts.MaxSubscriptions; active >= max {
		return "Too many operations on this connection: at most " + strconv.Itoa(max) + " may be active at once."
	}
	if err := c.h.opts.Operations.Claim(c.client, 1); err != nil {
		return capitalize(err.Error()) + "."
	}
	return ""
}

func (h *WebSocketHandler) releaseOperation(client string) { h.opts.Operations.Release(client, 1) }

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
