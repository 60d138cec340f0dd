package graphql

import (
	"context"

	"github.com/coder/websocket"
)

// Sending: one queue per connection, written by the goroutine that finds it
// idle or by the connection's sender, so that a slow client holds up only
// itself.

// outMsg is an entry of the send queue: a message, a result, or a close (its
// reason in data). Every connection holds SendQueue of them: it is kept small.
type outMsg struct {
	data []byte
	// A result is framed only when written, into a pooled buffer: a response
	// shared by many subscribers is never copied per subscriber.
	result *Response
	op     *wsOp // the operation the message belongs to, if any
	close  websocket.StatusCode
}

func (c *wsConn) sendErrors(id string, op *wsOp, errs ErrorList) bool {
	payload := appendList(nil, errs, func(buf []byte, e *Error) []byte { return e.appendJSON(buf) })
	return c.send(outMsg{data: opMessage("error", id, payload), op: op})
}

// send writes m at once when nothing is queued and no one is writing, or
// queues it for the sender, waiting for room; it reports false when the
// connection will send nothing more. The sender, which alone makes room,
// must not call it. A connection with several operations always queues, so
// that the sender writes their messages together.
func (c *wsConn) send(m outMsg) bool {
	c.mu.Lock()
	sole := len(c.ops) <= 1
	c.mu.Unlock()
	if m.close == 0 && sole && c.writing.TryLock() {
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
	case c.queue() <- m:
		c.wakeSender()
		return true
	case <-c.dead:
		c.queued.Add(-1)
		return false
	}
}

// writeMessage writes m, not a close, and reports false when the connection
// will send nothing more. The caller holds c.writing.
func (c *wsConn) writeMessage(m outMsg) bool {
	if c.closing.Load() != nil {
		return false
	}
	if c.expired() { // before the timer has run
		c.closeExpired()
		return false
	}
	if m.op != nil && m.op.stopped.Load() {
		return true
	}
	if m.result != nil {
		return c.writeResult(m.op.id, m.result)
	}
	return c.write(m.data)
}

// queue is the send queue, made when first needed: most connections never
// queue a message, and a server holds thousands of them.
func (c *wsConn) queue() chan outMsg {
	if q := c.out.Load(); q != nil {
		return *q
	}
	q := make(chan outMsg, c.h.opts.SendQueue)
	if !c.out.CompareAndSwap(nil, &q) {
		return *c.out.Load()
	}
	return q
}

// writeResult writes {"id":…,"type":…,"payload":resp}, framed in a pooled buffer.
func (c *wsConn) writeResult(id string, resp *Response) bool {
	bp := buffers.Get().(*[]byte)
	buf := appendOpHeader((*bp)[:0], c.proto.resultType(), id)
	buf = append(resp.appendJSON(append(buf, `,"payload":`...)), '}')
	ok := c.write(buf) // the library has sent or copied buf when it returns
	putBuffer(bp, buf)
	return ok
}

// keepAlive sends the protocol's keep-alive message once the connection is
// acknowledged, and reports false when the connection will send nothing more.
func (c *wsConn) keepAlive() bool {
	if !c.acked.Load() {
		return true
	}
	msg := c.proto.keepAlive(c)
	if msg == nil {
		return false
	}
	c.writing.Lock()
	defer c.writing.Unlock()
	return c.write(msg)
}

// write sends one message. The caller holds c.writing. A socket that takes
// it for WriteTimeout is dropped by checkWrites, which ends the write.
func (c *wsConn) write(p []byte) bool {
	return c.wrote(c.ws.Write(context.Background(), websocket.MessageText, p))
}

// wrote reports whether a write succeeded, and closes a socket it failed on,
// unless the failure is the close under way.
func (c *wsConn) wrote(err error) bool {
	if err != nil && c.closing.Load() == nil {
		c.raw.Close() // the reader ends too
	}
	return err == nil
}
