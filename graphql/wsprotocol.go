package graphql

import (
	"bytes"
	"encoding/json"
	"errors"
	"quartet/internal/jsonkeys"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// subprotocol is one GraphQL-over-WebSocket protocol: how it acts on what the
// client sends, and the messages it alone sends. One value serves one connection.
type subprotocol interface {
	// receive acts on a message, or on err, why it did not parse, and reports
	// whether to go on reading.
	receive(c *wsConn, m wsMessage, err error) bool
	// resultType is the type of the messages carrying results.
	resultType() string
	// keepAlive returns the keep-alive message to send, or nil when it has
	// dropped the connection. The sender alone calls it.
	keepAlive(c *wsConn) []byte
	// expiryNotice precedes the close at an AuthorizedUntil instant; nil: none.
	expiryNotice() []byte
	// refuse refuses connection_init with msg, closing with code and reason,
	// and reports whether to go on reading.
	refuse(c *wsConn, msg string, code websocket.StatusCode, reason string) bool
}

func newSubprotocol(name string) subprotocol {
	switch name {
	case ProtocolTransportWS:
		return &transportWS{}
	case ProtocolLegacyWS:
		return legacyWS{}
	}
	return nil
}

// handle acts on one message and reports whether to go on reading. It does so
// in one of the client's work slots, so that a client sending on many sockets
// at once takes its share of the CPUs, no more; one with too much work waiting
// has the socket closed with 1013 (try again later).
func (c *wsConn) handle(data []byte) (ok bool) {
	if clientSlot := c.h.opts.ClientSlot; clientSlot != nil {
		release, err := clientSlot(c.ctx, c.client)
		if err != nil {
			if c.ctx.Err() == nil {
				c.closeNow(websocket.StatusTryAgainLater, capitalize(err.Error()))
			}
			return false
		}
		c.slot.Store(&release)
		defer c.leaveSlot()
	}
	defer func() {
		if r := recover(); r != nil {
			c.h.schema.panicked(c.ctx, r)
			c.closeNow(closeInternal, "Internal server error")
			ok = false
		}
	}()
	if c.expired() { // an operation started now would run for a caller no longer authorized
		c.expire()
		return false
	}
	if !utf8.Valid(data) { // RFC 6455 fails a text message that is not UTF-8; JSON text is UTF-8, in any frame
		c.closeNow(websocket.StatusInvalidFramePayloadData, "Invalid UTF-8")
		return false
	}
	m, err := parseWSMessage(data)
	return c.proto.receive(c, m, err)
}

// maxOperationID bounds an operation's id, held while it runs and sent in each of its messages.
const maxOperationID = 256

type wsMessage struct {
	typ, id string          // id: "" when absent
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
	if !stringMember(fields["id"], &m.id) || len(m.id) > maxOperationID {
		return m, errors.New("id must be a string of at most " + strconv.Itoa(maxOperationID) + " bytes")
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

func initPayload(raw json.RawMessage) (p map[string]any, err error) {
	if raw != nil && (!isJSONObject(raw) || json.Unmarshal(raw, &p) != nil) {
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

func completeMessage(id string) []byte {
	return append(appendOpHeader(make([]byte, 0, len(id)+32), "complete", id), '}')
}

func appendOpHeader(buf []byte, typ, id string) []byte {
	buf = appendString(append(buf, `{"id":`...), id)
	return appendString(append(buf, `,"type":`...), typ)
}

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
	i := maxCloseReason
	for i < len(s) && !utf8.RuneStart(s[i]) { // valid UTF-8: s[0] starts a rune
		i--
	}
	return s[:min(i, len(s))]
}
