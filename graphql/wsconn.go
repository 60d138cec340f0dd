package graphql

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// One WebSocket connection's life: its state, the reader loop, the
// operations it starts and stops, and how it closes and is torn down.

// wsConn is one WebSocket connection. The reader goroutine (serve's)
// parses messages and starts operations; each operation has a goroutine that
// sets it up and sends its results, except a subscription to a notifying
// source, whose results the connection's sender goroutine writes once set
// up. The sender also writes what others queue, and the keep-alive
// messages (sendLoop): two goroutines for a socket with subscriptions, not
// one per task, since a server holds thousands of them.
type wsConn struct {
	h   *WebSocketHandler
	ws  *websocket.Conn
	raw net.Conn // under ws
	// coalescer is between ws and raw: the writer sends what is queued
	// together.
	coalescer *coalescer
	r         *http.Request // the upgrade request, with ctx as its context
	opened    time.Time     // when the upgrade was accepted, for the log
	client    string        // its address, as the caps count it
	turn      chan struct{} // the client's (clientCount.turn)
	inTurn    atomic.Bool   // the reader holds turn
	legacy    bool
	ctx       context.Context
	cancel    context.CancelFunc

	out      atomic.Pointer[chan outMsg] // the send queue, once made (queue)
	queued   atomic.Int64                // messages in out not yet written
	writing  sync.Mutex                  // held while a message is written; see send
	dead     chan struct{}               // closed when nothing more will be sent
	deadOnce sync.Once
	wg       sync.WaitGroup // goroutines other than the reader
	reads    atomic.Uint64  // messages received, for the keep-alive check
	acked    atomic.Bool
	// until is when the connection's authorization ends (AuthorizedUntil);
	// nil when it does not.
	until atomic.Pointer[time.Time]

	// Reader state.
	initReceived bool
	initTimer    *time.Timer
	expiryTimer  *time.Timer // closes the connection at until
	draining     bool        // a close is queued: ignore further messages

	// wake has a value when the sender has work: messages queued, a
	// notifying source's events, the keep-alive, or the end (sendLoop).
	wake         chan struct{}
	keepAliveDue atomic.Bool

	mu          sync.Mutex
	base        context.Context // parent of operation contexts, set at the ack
	ops         map[string]*wsOp
	passive     []*passiveOp // subscriptions the sender reads
	senderEnded bool         // the sender is gone; see addPassive
	closing     bool
	closeCode   websocket.StatusCode
	closeReason string
}

// wsOp is an active operation.
type wsOp struct {
	id     string
	cancel context.CancelFunc
	// stopped is set when the client ends the operation: results still in
	// the queue are then not sent.
	stopped atomic.Bool
}

func newWSConn(h *WebSocketHandler, ws *websocket.Conn, raw net.Conn, r *http.Request) *wsConn {
	// The connection outlives the request's handler (ServeHTTP), which
	// ends r's context; its values (the caller's, for OnInit) stay.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	return &wsConn{
		h:      h,
		ws:     ws,
		raw:    raw,
		r:      r.WithContext(ctx),
		opened: time.Now(),
		legacy: ws.Subprotocol() == ProtocolLegacyWS,
		ctx:    ctx,
		cancel: cancel,
		dead:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
		ops:    map[string]*wsOp{},
	}
}

// serve runs the connection until the socket closes, then waits for every
// goroutine it started.
func (c *wsConn) serve() {
	defer c.teardown()
	if c.ws.Subprotocol() == "" {
		c.closeNow(closeBadSubprotocol, "Subprotocol not acceptable")
		return
	}
	c.spawn(c.sendLoop)
	if d := c.h.opts.ConnectionInitWaitTimeout; d > 0 {
		c.wg.Add(1)
		c.h.live.Add(1)
		c.initTimer = time.AfterFunc(d, func() {
			defer c.h.live.Add(-1)
			defer c.wg.Done()
			c.closeNow(closeInitTimeout, "Connection initialisation timeout")
		})
	}
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			return
		}
		c.reads.Add(1)
		if c.draining {
			continue
		}
		c.turn <- struct{}{}
		c.inTurn.Store(true)
		ok := c.handle(data)
		c.leaveTurn()
		if !ok {
			return
		}
	}
}

var (
	errInitPanic            = errors.New("OnInit panicked")
	errAuthorizationExpired = errors.New(msgAuthorizationExpired)
)

// init runs OnInit.
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
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		return c.ctx, nil
	}
	if until, ok := authorizedUntil(ctx); ok && !c.h.opts.Now().Before(until) {
		return nil, errAuthorizationExpired
	}
	return ctx, nil
}

// admit makes ctx the parent of the connection's operations, and sets the
// connection to close when the authorization ctx carries ends. It runs in
// the reader, which alone starts operations: every one of them sees until.
func (c *wsConn) admit(ctx context.Context) {
	if until, ok := authorizedUntil(ctx); ok {
		c.until.Store(&until)
		// A timer, not a goroutine, waits for the instant: one for each of
		// thousands of sockets, stopped by teardown.
		c.wg.Add(1)
		c.h.live.Add(1)
		c.expiryTimer = time.AfterFunc(until.Sub(c.h.opts.Now()), func() {
			defer c.h.live.Add(-1)
			defer c.wg.Done()
			c.writing.Lock()
			defer c.writing.Unlock()
			c.closeExpired()
		})
	}
	c.mu.Lock()
	c.base = ctx
	c.mu.Unlock()
	c.acked.Store(true)
}

// expired reports whether the connection's authorization has ended.
func (c *wsConn) expired() bool {
	until := c.until.Load()
	return until != nil && !c.h.opts.Now().Before(*until)
}

// closeExpired closes the connection whose authorization has ended with
// 4403, after the legacy protocol's connection_error. The caller holds
// c.writing, so that no other message goes out once it has begun.
func (c *wsConn) closeExpired() {
	if c.isDead() || c.isClosing() {
		return // going already
	}
	// A batch may be under way (writeQueue, writePassive): what the coalescer
	// holds of it was written before the instant, and the close frame, which
	// closeNow waits on the peer to answer, must not be held behind it.
	if err := c.coalescer.release(); err != nil {
		c.writeFailed()
		return
	}
	if c.legacy {
		c.write(connectionErrorMessage(msgAuthorizationExpired))
	}
	c.closeNow(closeForbidden, "Forbidden: "+msgAuthorizationExpired)
}

// start begins the operation id, unless too many are active.
func (c *wsConn) start(id string, req Request) bool {
	if pq := c.h.opts.PersistedOnly; pq != nil && !pq.isPinned(sha256.Sum256([]byte(req.Query))) {
		return c.sendErrors(id, nil, ErrorList{newError(codePersistedQueryNotInList, msgNotInList)})
	}
	if refused := c.admitOperation(); refused != "" {
		return c.sendErrors(id, nil, ErrorList{newError(codeValidationFailed, refused)})
	}
	c.mu.Lock()
	ctx, cancel := context.WithCancel(c.base)
	op := &wsOp{id: id, cancel: cancel}
	c.ops[id] = op
	c.mu.Unlock()
	c.spawn(func() {
		if !c.run(ctx, op, req) {
			c.h.releaseOperation(c.client)
		}
	})
	return true
}

// stop ends the operation id at the client's request and reports whether
// it was active.
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

// run executes an operation and sends its results. It reports true when it
// handed the operation to the sender, which then ends it.
func (c *wsConn) run(ctx context.Context, op *wsOp, req Request) (handedOff bool) {
	var st *eventStream
	var err error
	if refused := c.inClientTurn(ctx, func() { st, err = c.h.schema.startStream(ctx, req, c.wakeSender) }); refused != nil {
		if ctx.Err() != nil {
			op.cancel()
			c.forget(op) // stopped by the client, or the connection is going
			return false
		}
		err = refused
	}
	if err != nil {
		op.cancel()
		c.forget(op)
		c.sendErrors(op.id, op, errorList(err))
		return false
	}
	if st.single == nil {
		return c.addPassive(op, st)
	}
	defer op.cancel()
	if c.send(outMsg{result: st.single, op: op}) { // else the connection is gone
		c.complete(op)
	}
	return false
}

// nextType is the type of a result message in the connection's protocol.
func (c *wsConn) nextType() string {
	if c.legacy {
		return "data"
	}
	return "next"
}

// complete ends an operation whose stream ended (the source closed, or ctx ended
// because the client stopped the operation or the connection is going), telling
// the client unless it stopped the operation itself.
func (c *wsConn) complete(op *wsOp) {
	c.forget(op)
	if m, tell := c.completion(op); tell {
		c.send(m)
	}
}

// completion is the message that tells the client op completed, and whether
// to send it: not when the client stopped op itself, or the connection is
// going.
func (c *wsConn) completion(op *wsOp) (outMsg, bool) {
	if op.stopped.Load() || c.ctx.Err() != nil {
		return outMsg{}, false
	}
	return outMsg{data: opMessage("complete", op.id, nil), op: op}, true
}

// passiveOp is a subscription to a notifying source, read by the sender.
type passiveOp struct {
	op       *wsOp
	st       *eventStream
	stopWake func() bool // stops the wake-up at the end of the operation's context
}

// addPassive hands op to the sender. It reports false, having ended op, when
// the sender is gone already (the connection is going).
func (c *wsConn) addPassive(op *wsOp, st *eventStream) bool {
	// A source need not close when ctx ends; the sender is woken to see it ended.
	p := &passiveOp{op: op, st: st, stopWake: context.AfterFunc(st.ctx, c.wakeSender)}
	c.mu.Lock()
	if c.senderEnded {
		c.mu.Unlock()
		p.end() // run's caller releases the operation
		return false
	}
	c.passive = append(c.passive, p)
	c.mu.Unlock()
	c.wakeSender() // events may have come before it was added
	return true
}

// end releases what op's stream holds.
func (p *passiveOp) end() {
	p.stopWake()
	p.st.done()
	p.op.cancel()
}

// wakeSender tells the sender it has work. It never blocks: one pending
// wake-up covers every reason.
func (c *wsConn) wakeSender() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sendLoop is the sender: when woken, it writes what is queued and the
// results of the notifying subscriptions (flush), then the keep-alive
// message when due. When nothing more will be sent (a write failed, or
// markDead, which wakes it), it ends those subscriptions and returns.
//
// It waits on c.wake alone, not in a select with the queue, c.dead and a
// ticker: a fan-out wakes it on thousands of connections at once, and a
// receive costs less than a select, which locks every channel it waits on.
// A timer, not a goroutine, tells it that a keep-alive is due.
func (c *wsConn) sendLoop() {
	d := c.h.opts.KeepAlive
	var keepAlive *time.Timer
	if d > 0 {
		keepAlive = time.AfterFunc(d, func() {
			c.keepAliveDue.Store(true)
			c.wakeSender()
		})
	}
	var ping pingState
	var ready []*passiveOp
	for ok := true; ok; {
		<-c.wake
		if c.isDead() {
			break
		}
		ready, ok = c.flush(ready)
		if ok && c.keepAliveDue.Swap(false) {
			ok = c.keepAlive(&ping)
			keepAlive.Reset(d)
		}
	}
	if keepAlive != nil {
		keepAlive.Stop()
	}
	c.markDead()
	c.mu.Lock()
	c.senderEnded = true
	passive := c.passive
	c.passive = nil
	c.mu.Unlock()
	for _, p := range passive {
		c.endPassive(p)
	}
}

// flush writes what is queued, then the results of the notifying
// subscriptions that have events and the completion of those whose stream
// ended, then a close that was queued; a connection's results for one event
// go out together, in one system call as far as they go. It reports false
// when the connection will send nothing more. ready is scratch space,
// returned for reuse.
func (c *wsConn) flush(ready []*passiveOp) ([]*passiveOp, bool) {
	c.mu.Lock()
	ready = append(ready[:0], c.passive...) // only the sender removes operations from c.passive
	c.mu.Unlock()
	c.writing.Lock()
	defer c.writing.Unlock()
	closing, ok := c.writeQueued()
	if ok && len(ready) > 0 {
		ok = c.writePassive(ready)
	}
	if closing.close != 0 {
		if ok {
			c.writeMessage(closing)
		}
		c.queued.Add(-1)
		ok = false
	}
	return ready, ok
}

// writePassive writes the results of the subscriptions in ready that have
// events, and completes those whose stream ended. It reports false when the
// connection will send nothing more. The caller holds c.writing.
func (c *wsConn) writePassive(ready []*passiveOp) bool {
	held := len(ready) > 1
	if held {
		c.coalescer.hold()
	}
	ok := true
	for _, p := range ready {
		ended := p.st.poll(func(resp *Response) bool {
			ok = c.writeMessage(outMsg{result: resp, op: p.op})
			return ok
		})
		if !ok {
			break // the connection is gone: the sender's end ends the rest
		}
		if !ended {
			continue
		}
		c.mu.Lock()
		c.passive = slices.DeleteFunc(c.passive, func(q *passiveOp) bool { return q == p })
		c.mu.Unlock()
		c.endPassive(p)
		c.forget(p.op)
		if m, tell := c.completion(p.op); tell {
			if ok = c.writeMessage(m); !ok {
				break
			}
		}
	}
	if held {
		ok = c.release() && ok
	}
	return ok
}

// endPassive ends a subscription that the sender read, and counts it out of its
// client's operations.
func (c *wsConn) endPassive(p *passiveOp) {
	p.end()
	c.h.releaseOperation(c.client)
}

// inClientTurn runs f in the client's turn (clientCount.turn), and in its
// share of the server (WebSocketOptions.ClientWork) when there is one: setting
// an operation up is the client's work as much as handling its messages. It
// returns why f did not run: ctx ended first, or the share refused it.
func (c *wsConn) inClientTurn(ctx context.Context, f func()) error {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.turn }()
	if c.h.opts.ClientWork == nil {
		f()
		return nil
	}
	return c.h.opts.ClientWork(ctx, c.client, f)
}

// forget removes op from the active operations, freeing its id.
func (c *wsConn) forget(op *wsOp) {
	c.mu.Lock()
	if c.ops[op.id] == op {
		delete(c.ops, op.id)
	}
	c.mu.Unlock()
}

// closeNow closes the socket with a close handshake, unless a close is
// already under way; it returns when the handshake is over.
func (c *wsConn) closeNow(code websocket.StatusCode, reason string) {
	c.leaveTurn() // the handshake waits for the peer, up to 5 s; the client's other sockets need not
	reason = limitReason(reason)
	if c.recordClose(code, reason) {
		c.ws.Close(code, reason)
	}
}

// leaveTurn gives back the client's turn if the reader holds it. Called by
// closeNow from another goroutine (the writer's close), it may give the turn
// back while the reader is still handling a message: the bound loosens for
// that one message of a socket that is closing, and holds again after it.
func (c *wsConn) leaveTurn() {
	if c.inTurn.CompareAndSwap(true, false) {
		<-c.turn
	}
}

// drop closes the socket without a close handshake.
func (c *wsConn) drop(reason string) {
	c.recordClose(closeDropped, reason)
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
		// Not c.spawn: teardown may be waiting already. Shutdown calls
		// this before it waits for h.wg, and ServeHTTP holds a count.
		c.h.wg.Add(1)
		go func() {
			defer c.h.wg.Done()
			c.closeNow(websocket.StatusGoingAway, "Going away")
		}()
	}
}

func (c *wsConn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

func (c *wsConn) recordClose(code websocket.StatusCode, reason string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.closing, c.closeCode, c.closeReason = true, code, reason
	return true
}

// spawn runs f in a goroutine that teardown waits for.
func (c *wsConn) spawn(f func()) {
	c.wg.Add(1)
	c.h.live.Add(1)
	go func() {
		defer c.h.live.Add(-1)
		defer c.wg.Done()
		f()
	}()
}

// markDead tells the connection's goroutines that nothing more will be sent.
func (c *wsConn) markDead() {
	c.deadOnce.Do(func() {
		close(c.dead)
		c.wakeSender()
	})
}

// isDead reports whether markDead has been called.
func (c *wsConn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// stopTimer stops *t, one of the connection's timers whose function counts
// in c.wg, unless it has fired already.
func (c *wsConn) stopTimer(t **time.Timer) {
	if *t != nil && (*t).Stop() {
		c.wg.Done()
		c.h.live.Add(-1)
	}
	*t = nil
}

// teardown ends every operation and waits for the connection's goroutines.
func (c *wsConn) teardown() {
	c.stopTimer(&c.initTimer)
	c.stopTimer(&c.expiryTimer)
	c.mu.Lock()
	ops := c.ops
	c.ops = nil
	c.mu.Unlock()
	for _, op := range ops {
		op.cancel()
	}
	c.cancel()
	c.markDead()
	// The reader is done: the peer's close frame has come (and the library
	// has answered it) or the socket has failed. Closing the TCP connection
	// now, as RFC 6455 has the server do, also ends a close handshake under
	// way in another goroutine, which would otherwise wait for frames that
	// the reader has consumed.
	c.raw.Close()
	c.ws.CloseNow()
	c.wg.Wait()
	c.mu.Lock()
	code, reason := c.closeCode, c.closeReason
	c.mu.Unlock()
	if log := c.h.opts.Log; log != nil {
		// The request's own log line was written at the upgrade.
		by := slog.String("closed_by", "client")
		if code != 0 {
			by = slog.Group("closed_by_server", slog.Int("code", int(code)), slog.String("reason", reason))
		}
		log.LogAttrs(context.Background(), slog.LevelInfo, "graphql websocket closed", slog.String("remote", c.r.RemoteAddr),
			slog.Duration("duration", time.Since(c.opened)), by)
	}
	if c.h.closed != nil {
		c.h.closed(code, reason)
	}
}
