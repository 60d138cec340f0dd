package graphql

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// wsConn is one WebSocket connection. Its reader goroutine (serve) handles
// messages and starts operations; each operation has a goroutine that sets it
// up and, for a query or mutation, sends its result. Subscriptions hold no
// goroutine: the connection's sender (sendLoop) reads their sources when
// notified, and writes what others queue and the keep-alive messages.
type wsConn struct {
	h         *WebSocketHandler
	ws        *websocket.Conn
	raw       net.Conn      // under ws
	coalescer *coalescer    // between ws and raw
	r         *http.Request // the upgrade request, with ctx as its context
	opened    time.Time
	client    string                 // its address, as the budgets count it
	proto     subprotocol            // nil: the client offered neither protocol
	slot      atomic.Pointer[func()] // gives back the work slot the reader holds
	ctx       context.Context
	cancel    context.CancelFunc

	queued       atomic.Int64    // messages in out not yet written
	writing      sync.Mutex      // held while a message is written; see send
	dead         context.Context // ended by markDead: nothing more will be sent
	markDead     func()          // ends dead and wakes the sender
	wake         chan struct{}   // has a value when the sender has work
	keepAliveDue atomic.Bool
	wg           sync.WaitGroup // goroutines and timers other than the reader
	reads        atomic.Uint64  // messages received, for the keep-alive check
	acked        atomic.Bool
	until        atomic.Pointer[time.Time] // when the authorization ends, if it does
	closing      atomic.Pointer[wsClose]   // the close under way, nil: none

	// Reader state.
	initTimer   *time.Timer
	expiryTimer *time.Timer     // closes the connection at until
	base        context.Context // parent of operation contexts, set at the ack
	draining    bool            // a close is queued: ignore further messages

	mu      sync.Mutex
	ops     map[string]*wsOp
	passive []*wsOp     // subscriptions the sender reads
	out     chan outMsg // the send queue, once made (queue)
}

type wsClose struct {
	code   websocket.StatusCode
	reason string
}

// wsOp is an active operation of a WebSocket connection, or of a reserved
// stream (sse_single.go), which sets only id, cancel and stopped.
type wsOp struct {
	id       string
	cancel   context.CancelFunc
	stopped  atomic.Bool  // by the client: its queued results are not sent
	st       *eventStream // a subscription's, read by the sender
	stopWake func() bool
}

func newWSConn(h *WebSocketHandler, ws *websocket.Conn, out *coalescer, r *http.Request, client string) *wsConn {
	// The connection outlives ServeHTTP, which ends r's context; its values
	// (the caller's, for OnInit) stay.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &wsConn{h: h, ws: ws, raw: out.conn, coalescer: out, client: client, r: r.WithContext(ctx), opened: time.Now(),
		proto: newSubprotocol(ws.Subprotocol()), ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), ops: map[string]*wsOp{}}
	dead, endDead := context.WithCancel(context.Background())
	c.dead, c.markDead = dead, func() {
		endDead()
		c.wakeSender()
	}
	return c
}

// serve reads until the socket closes, then waits for the goroutines it started.
func (c *wsConn) serve() {
	defer c.teardown()
	if c.proto == nil {
		c.closeNow(closeBadSubprotocol, "Subprotocol not acceptable")
		return
	}
	go c.track(c.sendLoop)()
	if d := c.h.opts.ConnectionInitWaitTimeout; d > 0 {
		c.initTimer = time.AfterFunc(d, c.track(func() {
			c.closeNow(closeInitTimeout, "Connection initialisation timeout")
		}))
	}
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			return
		}
		c.reads.Add(1)
		if !c.draining && !c.handle(data) {
			return
		}
	}
}

var (
	errInitPanic            = errors.New("OnInit panicked")
	errAuthorizationExpired = errors.New(msgAuthorizationExpired)
)

// initConnection acks connection_init, or refuses it the protocol's way.
func (c *wsConn) initConnection(raw json.RawMessage) bool {
	c.stopTimer(c.initTimer)
	payload, err := initPayload(raw)
	if err != nil {
		return c.proto.refuse(c, err.Error(), closeBadRequest, "Invalid message received")
	}
	ctx, err := c.init(payload)
	if errors.Is(err, errInitPanic) {
		return c.proto.refuse(c, "Internal server error", closeInternal, "Internal server error")
	}
	if err != nil {
		return c.proto.refuse(c, err.Error(), closeForbidden, "Forbidden: "+err.Error())
	}
	// Set in the reader, which alone starts operations: every one sees until.
	if until, ok := authorizedUntil(ctx); ok {
		c.until.Store(&until)
		c.expiryTimer = time.AfterFunc(until.Sub(c.h.opts.Now()), c.track(c.expire))
	}
	c.base = ctx
	c.acked.Store(true)
	return c.send(outMsg{data: []byte(`{"type":"connection_ack"}`)})
}

// init runs OnInit; a nil context it returns is the connection's.
func (c *wsConn) init(payload map[string]any) (ctx context.Context, err error) {
	if c.h.opts.OnInit == nil {
		return c.ctx, nil
	}
	defer func() {
		if r := recover(); r != nil {
			c.h.schema.panicked(c.ctx, r)
			ctx, err = nil, errInitPanic
		}
	}()
	ctx, err = c.h.opts.OnInit(c.r, payload)
	if err != nil || ctx == nil {
		return c.ctx, err
	}
	if until, ok := authorizedUntil(ctx); ok && !c.h.opts.Now().Before(until) {
		return nil, errAuthorizationExpired
	}
	return ctx, nil
}

func (c *wsConn) expired() bool {
	until := c.until.Load()
	return until != nil && !c.h.opts.Now().Before(*until)
}

func (c *wsConn) expire() {
	c.writing.Lock()
	defer c.writing.Unlock()
	c.closeExpired()
}

// closeExpired closes the connection whose authorization has ended with 4403,
// after the protocol's notice, if any. The caller holds c.writing, so that no
// other message goes out once it has begun.
func (c *wsConn) closeExpired() {
	if c.dead.Err() != nil || c.closing.Load() != nil {
		return
	}
	// What the coalescer holds of a batch under way was written before the
	// instant; the close frame must not wait behind it.
	if !c.wrote(c.coalescer.release()) {
		return
	}
	if notice := c.proto.expiryNotice(); notice != nil {
		c.write(notice)
	}
	c.closeNow(closeForbidden, "Forbidden: "+msgAuthorizationExpired)
}

func (c *wsConn) start(id string, req Request) bool {
	if pq := c.h.opts.PersistedOnly; pq != nil && !pq.isPinned(sha256.Sum256([]byte(req.Query))) {
		return c.sendErrors(id, nil, ErrorList{newError(codePersistedQueryNotInList, msgNotInList)})
	}
	c.mu.Lock()
	active := len(c.ops)
	c.mu.Unlock()
	// Only the reader starts operations, so active cannot rise meanwhile.
	if max := c.h.opts.MaxSubscriptions; active >= max {
		return c.sendErrors(id, nil, ErrorList{newError(codeValidationFailed,
			"Too many operations on this connection: at most "+strconv.Itoa(max)+" may be active at once.")})
	}
	if err := c.h.opts.Operations.Claim(c.client, 1); err != nil {
		return c.sendErrors(id, nil, ErrorList{newError(codeValidationFailed, capitalize(err.Error())+".")})
	}
	c.mu.Lock()
	ctx, cancel := context.WithCancel(c.base)
	op := &wsOp{id: id, cancel: cancel}
	c.ops[id] = op
	c.mu.Unlock()
	go c.track(func() {
		if !c.run(ctx, op, req) {
			c.h.opts.Operations.Release(c.client, 1)
		}
	})()
	return true
}

// stop ends the operation id at the client's request and reports whether it
// was active.
func (c *wsConn) stop(id string) bool {
	c.mu.Lock()
	op := c.ops[id]
	delete(c.ops, id)
	c.mu.Unlock()
	if op == nil {
		return false
	}
	op.stopped.Store(true)
	op.cancel()
	return true
}

// run sets an operation up and sends a query's or mutation's result. It
// reports true when it handed a subscription to the sender, which then ends it.
func (c *wsConn) run(ctx context.Context, op *wsOp, req Request) (handedOff bool) {
	var st *eventStream
	var err error
	refused := c.inClientTurn(ctx, func() { st, err = c.h.schema.startStream(ctx, req, c.wakeSender) })
	if err = cmp.Or(refused, err); err != nil {
		op.cancel()
		c.forget(op)
		if refused == nil || ctx.Err() == nil { // else stopped by the client, or the connection is going
			c.sendErrors(op.id, op, errorList(err))
		}
		return false
	}
	if st.single == nil {
		op.st = st
		c.addPassive(op)
		return true
	}
	defer op.cancel()
	if c.send(outMsg{result: st.single, op: op}) { // else the connection is gone
		c.complete(op, c.send)
	}
	return false
}

// complete forgets op and tells the client it completed through send, unless
// the client stopped op itself or the connection is going; false: send failed.
func (c *wsConn) complete(op *wsOp, send func(outMsg) bool) bool {
	c.forget(op)
	if op.stopped.Load() || c.ctx.Err() != nil {
		return true
	}
	return send(outMsg{data: completeMessage(op.id), op: op})
}

// addPassive hands the subscription op to the sender, or ends it when the
// sender is gone.
func (c *wsConn) addPassive(op *wsOp) {
	// A source need not end when ctx ends; the sender is woken to see it.
	op.stopWake = context.AfterFunc(op.st.ctx, c.wakeSender)
	c.mu.Lock()
	if c.dead.Err() != nil { // the sender has ended, or takes c.passive after this
		c.mu.Unlock()
		c.endPassive(op)
		return
	}
	c.passive = append(c.passive, op)
	c.mu.Unlock()
	c.wakeSender() // events may have come before it was added
}

func (c *wsConn) endPassive(op *wsOp) {
	op.stopWake()
	op.st.done()
	op.cancel()
	c.h.opts.Operations.Release(c.client, 1)
}

func (c *wsConn) wakeSender() { wake(c.wake) }

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// outMsg is an entry of the send queue: a message, a result, or a close (its
// reason in data). Every connection holds SendQueue of them: it is kept small.
// A reserved stream's queue holds its framed events so, an empty one its last.
type outMsg struct {
	data []byte
	// A result is framed only when written, into a pooled buffer: a response
	// shared by many subscribers is never copied per subscriber.
	result  *Response
	op      *wsOp // the operation the message belongs to, if any
	close   websocket.StatusCode
	claimed int64 // of the client's answers budget, while it is queued
}

func (c *wsConn) sendErrors(id string, op *wsOp, errs ErrorList) bool {
	buf := append(appendOpHeader(nil, "error", id), `,"payload":`...)
	buf = appendList(buf, errs, func(buf []byte, e *Error) []byte { return e.appendJSON(buf) })
	return c.send(outMsg{data: append(buf, '}'), op: op})
}

// send writes m at once when nothing is queued and no one is writing, or
// queues it for the sender, waiting for room (a slow client holds up only
// itself); it reports false when the connection will send nothing more. The
// sender, which alone makes room, must not call it. A connection with several
// operations always queues, so that the sender writes their messages together.
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
	if m.claimed = int64(len(m.data)); m.result != nil {
		m.claimed += int64(len(m.result.Data))
	}
	if err := c.h.opts.Answers.Claim(c.client, m.claimed); err != nil {
		c.closeNow(websocket.StatusTryAgainLater, capitalize(err.Error()))
		return false
	}
	c.queued.Add(1)
	select {
	case c.queue() <- m:
		c.wakeSender()
		return true
	case <-c.dead.Done():
		c.queued.Add(-1)
		c.h.opts.Answers.Release(c.client, m.claimed)
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
	if m.result == nil {
		return c.write(m.data)
	}
	bp := buffers.Get().(*[]byte)
	buf := appendOpHeader((*bp)[:0], c.proto.resultType(), m.op.id)
	buf = append(m.result.appendJSON(append(buf, `,"payload":`...)), '}')
	ok := c.write(buf) // the library has sent or copied buf when it returns
	putBuffer(bp, buf)
	return ok
}

// queue is the send queue, made when first needed: most connections never
// queue a message, and a server holds thousands of them.
func (c *wsConn) queue() chan outMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		c.out = make(chan outMsg, c.h.opts.SendQueue)
	}
	return c.out
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

// sendLoop is the sender: when woken, it flushes, then writes the keep-alive
// message when due. When nothing more will be sent, it ends the subscriptions.
// It waits on c.wake alone, as a receive costs less than a select when a
// fan-out wakes thousands of connections; a timer says a keep-alive is due.
func (c *wsConn) sendLoop() {
	d := c.h.opts.KeepAlive
	var keepAlive *time.Timer
	if d > 0 {
		keepAlive = time.AfterFunc(d, func() {
			c.keepAliveDue.Store(true)
			c.wakeSender()
		})
		defer keepAlive.Stop()
	}
	var ready []*wsOp
	for ok := true; ok; {
		<-c.wake
		if c.dead.Err() != nil {
			break
		}
		ready, ok = c.flush(ready)
		if ok && c.keepAliveDue.Swap(false) {
			ok = c.keepAlive()
			keepAlive.Reset(d)
		}
	}
	c.markDead()
	c.mu.Lock()
	passive := c.passive
	c.passive = nil
	c.mu.Unlock()
	for _, p := range passive {
		c.endPassive(p)
	}
}

// flush writes what is queued up to a close, then the subscriptions' results
// and completions, then the close; a connection's results for one event go
// out together, in one system call as far as they go. It reports false when
// the connection will send nothing more. ready is scratch space.
func (c *wsConn) flush(ready []*wsOp) ([]*wsOp, bool) {
	c.mu.Lock()
	ready = append(ready[:0], c.passive...) // only the sender removes from c.passive
	queue := c.out                          // nil until made
	c.mu.Unlock()
	c.writing.Lock()
	defer c.writing.Unlock()
	held := len(queue)+len(ready) > 1
	if held {
		c.coalescer.hold()
	}
	ok, closing := true, outMsg{}
	for ok && len(queue) > 0 {
		m := <-queue // only the sender takes from the queue
		c.h.opts.Answers.Release(c.client, m.claimed)
		if m.close != 0 {
			closing = m
			break
		}
		ok = c.writeMessage(m)
		c.queued.Add(-1)
	}
	if ok {
		ok = c.writePassive(ready)
	}
	if held {
		ok = c.wrote(c.coalescer.release()) && ok
	}
	if closing.close != 0 {
		if ok {
			c.closeNow(closing.close, string(closing.data))
		}
		c.queued.Add(-1)
		ok = false
	}
	return ready, ok
}

// writePassive writes the results of the subscriptions in ready, and
// completes those whose stream ended. The caller holds c.writing.
func (c *wsConn) writePassive(ready []*wsOp) bool {
	for _, op := range ready {
		ok := true
		ended := op.st.poll(func(resp *Response) bool {
			ok = c.writeMessage(outMsg{result: resp, op: op})
			return ok
		})
		if !ok {
			return false // the connection is gone: the sender's end ends the rest
		}
		if !ended {
			continue
		}
		c.mu.Lock()
		c.passive = slices.DeleteFunc(c.passive, func(q *wsOp) bool { return q == op })
		c.mu.Unlock()
		c.endPassive(op)
		if !c.complete(op, c.writeMessage) {
			return false
		}
	}
	return true
}

// inClientTurn runs f in one of the client's work slots
// (WebSocketOptions.ClientSlot), and returns why it did not run f.
func (c *wsConn) inClientTurn(ctx context.Context, f func()) error {
	if clientSlot := c.h.opts.ClientSlot; clientSlot != nil {
		release, err := clientSlot(ctx, c.client)
		if err != nil {
			return err
		}
		defer release()
	}
	f()
	return nil
}

// leaveSlot gives back the slot the reader holds, if any. From another
// goroutine (a close), it may do so while the reader still handles a message:
// the bound loosens for that one message of a closing socket.
func (c *wsConn) leaveSlot() {
	if release := c.slot.Swap(nil); release != nil {
		(*release)()
	}
}

func (c *wsConn) forget(op *wsOp) {
	c.mu.Lock()
	if c.ops[op.id] == op {
		delete(c.ops, op.id)
	}
	c.mu.Unlock()
}

// closeNow closes the socket with a close handshake, unless a close is under
// way; it returns when the handshake is over.
func (c *wsConn) closeNow(code websocket.StatusCode, reason string) {
	c.leaveSlot() // the handshake waits for the peer, up to 5 s; the client's other work need not
	reason = limitReason(reason)
	if c.closing.CompareAndSwap(nil, &wsClose{code, reason}) {
		c.ws.Close(code, reason)
	}
}

func (c *wsConn) drop(reason string) {
	c.closing.CompareAndSwap(nil, &wsClose{closeDropped, reason})
	c.raw.Close()
}

// goAway closes the connection with 1001 after what is queued, or at once
// when the queue is full.
func (c *wsConn) goAway() {
	c.queued.Add(1)
	select {
	case c.queue() <- outMsg{close: websocket.StatusGoingAway, data: []byte("Going away")}:
		c.wakeSender()
	default:
		c.queued.Add(-1)
		// Not c.track: teardown may be waiting already. Shutdown waits for h.wg.
		c.h.wg.Add(1)
		go func() {
			defer c.h.wg.Done()
			c.closeNow(websocket.StatusGoingAway, "Going away")
		}()
	}
}

// track counts f, to be run by a goroutine or a timer, in what teardown waits for.
func (c *wsConn) track(f func()) func() {
	c.wg.Add(1)
	c.h.live.Add(1)
	return func() {
		defer c.h.live.Add(-1)
		defer c.wg.Done()
		f()
	}
}

// stopTimer stops t, a timer made with track, if it is pending.
func (c *wsConn) stopTimer(t *time.Timer) {
	if t != nil && t.Stop() {
		c.wg.Done()
		c.h.live.Add(-1)
	}
}

// teardown ends every operation and waits for the connection's goroutines.
func (c *wsConn) teardown() {
	c.stopTimer(c.initTimer)
	c.stopTimer(c.expiryTimer)
	c.mu.Lock()
	ops := c.ops
	c.ops = nil
	c.mu.Unlock()
	for _, op := range ops {
		op.cancel()
	}
	c.cancel()
	c.markDead()
	// The reader is done. Closing the TCP connection now, as RFC 6455 has the
	// server do, also ends a close handshake waiting in another goroutine for
	// frames the reader has consumed.
	c.raw.Close()
	c.ws.CloseNow()
	c.wg.Wait()
	c.mu.Lock()
	queue := c.out
	c.mu.Unlock()
	for len(queue) > 0 { // left by the sender: no one sends now but goAway, whose close claims nothing
		c.h.opts.Answers.Release(c.client, (<-queue).claimed)
	}
	closed := cmp.Or(c.closing.Load(), &wsClose{}) // code 0: the peer closed first
	if log := c.h.opts.Log; log != nil {
		by := slog.String("closed_by", "client")
		if closed.code != 0 {
			by = slog.Group("closed_by_server", slog.Int("code", int(closed.code)), slog.String("reason", closed.reason))
		}
		log.LogAttrs(context.Background(), slog.LevelInfo, "graphql websocket closed", slog.String("remote", c.r.RemoteAddr),
			slog.Duration("duration", time.Since(c.opened)), by)
	}
	if c.h.closed != nil {
		c.h.closed(closed.code, closed.reason)
	}
}
