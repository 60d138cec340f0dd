package graphql

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"quartet/internal/jsonkeys"
	"strings"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// The messages of the two protocols: what each does, how they are parsed and
// framed.

// handle acts on one message and reports whether to go on reading.
func (c *wsConn) handle(data []byte) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.h.schema.panicked(c.ctx, r)
			c.closeNow(closeInternal, "Internal server error")
			ok = false
		}
	}()
	if c.expired() { // an operation started now would run for a caller no longer authorized
		c.writing.Lock()
		defer c.writing.Unlock()
		c.closeExpired()
		return false
	}
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
	if (m.typ == "subscribe" || m.typ == "complete") && m.id == "" {
		return c.badRequest(fmt.Sprintf("%q needs a non-empty string id", m.typ))
	}
	switch m.typ {
	case "connection_init":
		if c.initReceived {
			c.closeNow(closeTooManyInits, "Too many initialisation requests")
			return false
		}
		return c.initConnection(m.payload, func(msg string, code websocket.StatusCode, reason string) bool {
			if code == closeBadRequest {
				return c.badRequest(msg)
			}
			c.closeNow(code, reason)
			return false
		})
	case "ping", "pong":
		if m.payload != nil && !isJSONObject(m.payload) {
			return c.badRequest(fmt.Sprintf("%q payload must be an object", m.typ))
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
	if (m.typ == "start" || m.typ == "stop") && m.id == "" {
		return c.connectionError(fmt.Sprintf("%q needs a non-empty string id", m.typ))
	}
	switch m.typ {
	case "connection_init":
		if c.initReceived {
			return c.connectionError("Too many initialisation requests")
		}
		if ok := c.initConnection(m.payload, c.refuse); !ok || !c.acked.Load() { // refused: no keep-alive
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

// initConnection handles connection_init up to its ack; refuse refuses the
// connection the protocol's way.
func (c *wsConn) initConnection(raw json.RawMessage, refuse func(msg string, code websocket.StatusCode, reason string) bool) bool {
	c.initReceived = true
	c.stopTimer(&c.initTimer)
	payload, err := initPayload(raw)
	if err != nil {
		return refuse(err.Error(), closeBadRequest, "Invalid message received")
	}
	ctx, err := c.init(payload)
	if errors.Is(err, errInitPanic) {
		return refuse("Internal server error", closeInternal, "Internal server error")
	}
	if err != nil {
		return refuse(err.Error(), closeForbidden, "Forbidden: "+err.Error())
	}
	c.admit(ctx)
	return c.send(outMsg{data: []byte(`{"type":"connection_ack"}`)})
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
	c.send(outMsg{close: code, data: []byte(reason)})
	return true // read on, so that the close handshake completes
}

// wsMessage is an incoming message.
type wsMessage struct {
	typ     string
	id      string          // "" when absent
	payload json.RawMessage // nil when absent or null
}

// parseWSMessage reads the envelope shared by both protocols. Keys are
// matched exactly; a message that encoding/json would read ambiguously (a
// key repeated anywhere, envelope keys differing only in case) is refused, as
// package jsonkeys refuses.
func parseWSMessage(data []byte) (wsMessage, error) {
	var m wsMessage
	var fields map[string]json.RawMessage
	err := jsonkeys.Unmarshal(data, &fields)
	if jsonkeys.Refused(err) {
		return m, err
	}
	if err != nil || fields == nil {
		return m, errors.New("not a JSON object")
	}
	raw, ok := fields["type"]
	if !ok {
		return m, errors.New("no type")
	}
	if json.Unmarshal(raw, &m.typ) != nil || m.typ == "" {
		return m, errors.New("type must be a non-empty string")
	}
	if !stringMember(fields["id"], &m.id) {
		return m, errors.New("id must be a string")
	}
	if raw := fields["payload"]; !isNull(raw) {
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
	if !stringMember(fields["operationName"], &req.OperationName) {
		return req, errors.New("payload.operationName must be a string")
	}
	if raw := fields["variables"]; raw != nil && !isNull(raw) {
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

// stringMember decodes raw into *dst unless it is absent or null, and reports
// false when it is not a string.
func stringMember(raw json.RawMessage, dst *string) bool {
	return raw == nil || isNull(raw) || json.Unmarshal(raw, dst) == nil
}

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
