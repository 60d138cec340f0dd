package graphql

import (
	"context"
	"runtime"
	"sync"

	"github.com/coder/websocket"
)

// Sending on a WebSocket connection: one queue per connection, written by
// the goroutine that finds it idle or by the connection's sender, so that a
// slow client holds up only itself (see WebSocketHandler, Slow clients).

// outMsg is an entry of the send queue: a message, a result, or a close.
// Every connection holds SendQueue of them, so it is kept small: a result's
// type comes from the connection's protocol, and a close's reason is in data.
type outMsg struct {
	data []byte // the message, or the close's reason
	// A result of op is framed only when it is written, into a pooled
	// buffer: a response shared by many subscribers is then never copied
	// per subscriber, but for the write itself.
	result *Response
	op     *wsOp // the operation the message belongs to, if any
	close  websocket.StatusCode
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

// send sends m, or queues it for the sender, waiting for room; it reports
// false when the connection will send nothing more. It must not be called
// by the sender, which alone makes room.
//
// When nothing is queued and no one is writing, m is written at once by the
// calling goroutine, not handed to the sender. Each goroutine's messages
// still go out in order: m is written directly only when everything queued
// before it has been written.
//
// A connection with several operations always queues: their goroutines may
// all be woken at once, and the sender writes their results together
// (writeQueue) instead of each in a system call of its own.
func (c *wsConn) send(m outMsg) bool {
	if m.close == 0 && c.soleOperation() && c.writing.TryLock() {
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

// soleOperation reports whether the connection has at most one active operation.
func (c *wsConn) soleOperation() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ops) <= 1
}

// writeMessage writes one queued or directly sent message, and reports false when
// the connection will send nothing more. The caller holds c.writing.
func (c *wsConn) writeMessage(m outMsg) bool {
	if m.close != 0 {
		c.closeNow(m.close, string(m.data))
		return false
	}
	if c.isClosing() {
		return false // a close has been sent or is under way
	}
	if c.expired() {
		// The timer may not have run yet: this message would be the first
		// one after the instant.
		c.closeExpired()
		return false
	}
	if m.op != nil && m.op.stopped.Load() {
		return true
	}
	if m.result != nil {
		return c.writeResult(c.nextType(), m.op.id, m.result)
	}
	return c.write(m.data)
}

// queue is the send queue, made when first needed: most connections write
// every message directly (send) and never queue one, and a server holds
// thousands of them.
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

// writeQueued writes what is queued up to a close, which it takes from the
// queue and returns unwritten (close is 0 when there is none), and reports
// false when the connection will send nothing more. The caller holds
// c.writing, and writes the close after the subscriptions' last results
// (flush): a subscription that ended just before is completed first.
func (c *wsConn) writeQueued() (closing outMsg, ok bool) {
	q := c.out.Load()
	if q == nil {
		return outMsg{}, true
	}
	select {
	case m := <-*q:
		return c.writeQueue(*q, m)
	default:
		return outMsg{}, true
	}
}

// writeQueue is writeQueued for m and whatever else is queued on q by then,
// in one system call as far as it goes.
func (c *wsConn) writeQueue(q chan outMsg, m outMsg) (closing outMsg, ok bool) {
	if m.close == 0 && !c.soleOperation() {
		// The other operations woken by the same event queue their results
		// meanwhile, and go out in the same system call.
		runtime.Gosched()
	}
	held := false
	ok = true
	for m.close == 0 {
		if !held && len(q) > 0 {
			c.coalescer.hold()
			held = true
		}
		ok = c.writeMessage(m)
		c.queued.Add(-1)
		if !ok || len(q) == 0 {
			m = outMsg{}
			break
		}
		m = <-q // only this goroutine takes from the queue
	}
	if held {
		ok = c.release() && ok
	}
	return m, ok
}

// release sends what the coalescer holds.
func (c *wsConn) release() bool {
	if err := c.coalescer.release(); err != nil {
		c.writeFailed()
		return false
	}
	return true
}

// writeResult writes {"id":…,"type":…,"payload":resp}, framed in a pooled
// buffer that is free again once written.
func (c *wsConn) writeResult(typ, id string, resp *Response) bool {
	bp := frameBuffers.Get().(*[]byte)
	buf := appendOpHeader((*bp)[:0], typ, id)
	buf = append(buf, `,"payload":`...)
	buf = resp.appendJSON(buf)
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

// pingState is what the sender knows of its graphql-transport-ws pings.
type pingState struct {
	pinged bool   // a ping has been sent
	reads  uint64 // c.reads when it was
}

// keepAlive sends the keep-alive message once the connection is acknowledged:
// the legacy "ka", or a ping, after dropping a client that sent nothing since
// the last ping. It reports false when the connection will send nothing more.
func (c *wsConn) keepAlive(ping *pingState) bool {
	if !c.acked.Load() {
		return true
	}
	if c.legacy {
		return c.lockAndWrite([]byte(`{"type":"ka"}`))
	}
	reads := c.reads.Load()
	if ping.pinged && reads == ping.reads {
		c.drop("No answer to ping")
		return false
	}
	*ping = pingState{pinged: true, reads: reads}
	return c.lockAndWrite([]byte(`{"type":"ping"}`))
}

// write sends one message. The caller holds c.writing. A socket that takes
// it for WriteTimeout is dropped by the handler (checkWrites), which ends
// the write.
func (c *wsConn) write(p []byte) bool {
	if err := c.ws.Write(context.Background(), websocket.MessageText, p); err != nil {
		c.writeFailed()
		return false
	}
	return true
}

// writeFailed closes a socket a write failed on, unless the failure is the
// close under way (checkWrites' drop among them).
func (c *wsConn) writeFailed() {
	if !c.isClosing() {
		c.raw.Close() // a broken socket; the reader ends too
	}
}

// lockAndWrite is write for a caller that does not hold c.writing.
func (c *wsConn) lockAndWrite(p []byte) bool {
	c.writing.Lock()
	defer c.writing.Unlock()
	return c.write(p)
}
