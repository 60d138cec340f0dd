package graphql

import (
	"fmt"

	"github.com/coder/websocket"
)

// transportWS is graphql-transport-ws, the protocol of the graphql-ws library:
// a message out of the protocol closes the socket with the code it gives.
type transportWS struct {
	pinged bool   // a ping is unanswered
	reads  uint64 // c.reads when it went out
}

func (p *transportWS) receive(c *wsConn, m wsMessage, err error) bool {
	if err != nil {
		return badRequest(c, err.Error())
	}
	if (m.typ == "subscribe" || m.typ == "complete") && m.id == "" {
		return badRequest(c, fmt.Sprintf("%q needs a non-empty string id", m.typ))
	}
	switch m.typ {
	case "connection_init":
		if c.acked.Load() { // a refused one stops the reading
			c.closeNow(closeTooManyInits, "Too many initialisation requests")
			return false
		}
		return c.initConnection(m.payload)
	case "ping", "pong":
		if m.payload != nil && !isJSONObject(m.payload) {
			return badRequest(c, fmt.Sprintf("%q payload must be an object", m.typ))
		}
		if m.typ == "pong" {
			return true
		}
		pong := []byte(`{"type":"pong"`)
		if m.payload != nil {
			pong = append(append(pong, `,"payload":`...), m.payload...)
		}
		return c.send(outMsg{data: append(pong, '}')})
	case "subscribe":
		req, err := parseOperation(m.payload)
		if err != nil {
			return badRequest(c, err.Error())
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
		c.stop(m.id)
		return true
	}
	return badRequest(c, fmt.Sprintf("unexpected message type %q", m.typ))
}

func badRequest(c *wsConn, detail string) bool {
	c.closeNow(closeBadRequest, "Invalid message received: "+detail)
	return false
}

func (p *transportWS) refuse(c *wsConn, msg string, code websocket.StatusCode, reason string) bool {
	if code == closeBadRequest {
		return badRequest(c, msg)
	}
	c.closeNow(code, reason)
	return false
}

func (p *transportWS) resultType() string { return "next" }

// keepAlive pings, or drops a client that sent nothing since the last ping.
func (p *transportWS) keepAlive(c *wsConn) []byte {
	reads := c.reads.Load()
	if p.pinged && reads == p.reads {
		c.drop("No answer to ping")
		return nil
	}
	p.pinged, p.reads = true, reads
	return []byte(`{"type":"ping"}`)
}

func (p *transportWS) expiryNotice() []byte { return nil }
