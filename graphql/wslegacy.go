package graphql

import (
	"fmt"

	"github.com/coder/websocket"
)

// legacyWS is graphql-ws, the protocol of subscriptions-transport-ws. Where
// graphql-transport-ws closes the socket, it answers connection_error or an
// error message and reads on; a refused connection_init is answered, then closed.
type legacyWS struct{}

func (legacyWS) receive(c *wsConn, m wsMessage, err error) bool {
	if err != nil {
		return connectionError(c, err.Error())
	}
	if (m.typ == "start" || m.typ == "stop") && m.id == "" {
		return connectionError(c, fmt.Sprintf("%q needs a non-empty string id", m.typ))
	}
	switch m.typ {
	case "connection_init":
		if c.acked.Load() { // a refused one stops the reading
			return connectionError(c, "Too many initialisation requests")
		}
		if ok := c.initConnection(m.payload); !ok || !c.acked.Load() { // refused: no keep-alive
			return ok
		}
		return c.h.opts.KeepAlive <= 0 || c.send(outMsg{data: []byte(`{"type":"ka"}`)})
	case "connection_terminate":
		c.closeNow(websocket.StatusNormalClosure, "")
		return false
	case "start":
		if !c.acked.Load() {
			return c.sendErrors(m.id, nil, ErrorList{newError("", "The connection must be initialised with connection_init first.")})
		}
		req, err := parseOperation(m.payload)
		if err != nil {
			return c.sendErrors(m.id, nil, ErrorList{newError(codeBadUserInput, err.Error())})
		}
		c.stop(m.id) // a start reusing an active id replaces that operation
		return c.start(m.id, req)
	case "stop":
		if c.stop(m.id) {
			return c.send(outMsg{data: completeMessage(m.id)})
		}
		return true
	}
	msg := fmt.Sprintf("Invalid message type %q", m.typ)
	if m.id == "" {
		return connectionError(c, msg)
	}
	return c.sendErrors(m.id, nil, ErrorList{newError("", msg)})
}

func connectionError(c *wsConn, msg string) bool {
	return c.send(outMsg{data: connectionErrorMessage(msg)})
}

func (legacyWS) refuse(c *wsConn, msg string, code websocket.StatusCode, reason string) bool {
	c.draining = true
	if !connectionError(c, msg) {
		return false
	}
	c.send(outMsg{close: code, data: []byte(reason)})
	return true // read on, so that the close handshake completes
}

func connectionErrorMessage(msg string) []byte {
	buf := appendString([]byte(`{"type":"connection_error","payload":{"message":`), msg)
	return append(buf, "}}"...)
}

func (legacyWS) resultType() string { return "data" }

func (legacyWS) keepAlive(*wsConn) []byte { return []byte(`{"type":"ka"}`) }

func (legacyWS) expiryNotice() []byte { return connectionErrorMessage(msgAuthorizationExpired) }
