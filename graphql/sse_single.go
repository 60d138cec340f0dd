package graphql

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// reservation is a stream reserved by PUT, and the operations running on it.
type reservation struct {
	token, client string
	ctx           context.Context // the operations' parent: ends with the reservation
	cancel        context.CancelFunc
	until         time.Time      // when the authorization ends; zero: never
	out           chan outMsg    // framed events waiting for the stream, with their answer bytes
	expire        *time.Timer    // ends the reservation, stopped when its stream comes
	leave         func()         // gives back what enter claimed
	running       sync.WaitGroup // the operations' goroutines (runReserved)
	endOnce       sync.Once

	mu        sync.Mutex
	connected bool
	closing   bool // at Shutdown: no operation starts
	ops       map[string]*wsOp
}

// reserve answers PUT: 201 with a reservation's token, as text/plain.
func (s *Streams) reserve(w http.ResponseWriter, r *http.Request) {
	client := s.opts.ClientOf(r)
	ctx, until, err := s.authorize(r, context.WithoutCancel(r.Context()))
	if err != nil {
		refuseUpgrade(w, http.StatusForbidden, "", "Forbidden: "+err.Error())
		return
	}
	leave, ok := s.enter(w, client)
	if !ok {
		return
	}
	res := &reservation{token: rand.Text(), client: client, until: until, leave: leave,
		out: make(chan outMsg, s.opts.SendQueue), ops: map[string]*wsOp{}}
	res.ctx, res.cancel = context.WithCancel(ctx)
	res.mu.Lock() // the timer may fire before the assignment is done
	res.expire = time.AfterFunc(s.opts.ReservationTimeout, func() { s.end(res) })
	res.mu.Unlock()
	s.mu.Lock()
	s.reservations[res.token] = res
	late := s.shutdown // after Shutdown ended the reservations it saw
	s.mu.Unlock()
	if late {
		s.end(res)
		refuseUpgrade(w, http.StatusServiceUnavailable, "", "The server is shutting down.")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, res.token)
}

func (s *Streams) end(res *reservation) {
	res.endOnce.Do(func() {
		s.mu.Lock()
		delete(s.reservations, res.token)
		s.mu.Unlock()
		res.mu.Lock()
		res.expire.Stop()
		res.cancel() // under mu: add starts no operation after it
		res.mu.Unlock()
		res.leave()
		go func() { // once no operation can send, what waits gives its bytes back
			res.running.Wait()
			for {
				select {
				case ev := <-res.out:
					s.opts.Answers.Release(res.client, ev.claimed)
				default:
					return
				}
			}
		}()
	})
}

// closeReserved ends res at Shutdown: its stream, if it has one, after the
// last events its operations queue (runReserved).
func (s *Streams) closeReserved(res *reservation) {
	res.mu.Lock()
	res.closing = true // running.Wait below is its last
	connected := res.connected
	res.mu.Unlock()
	if !connected {
		s.end(res)
		return
	}
	go func() {
		res.running.Wait()
		res.out <- outMsg{} // the stream's last; if it is gone, end's drain makes room
	}()
}

func (s *Streams) reservation(w http.ResponseWriter, token string) *reservation {
	if token == "" { // a DELETE without one
		writeHTTPError(w, mediaJSON, http.StatusBadRequest, "DELETE stops an operation of a reserved stream: send the reservation's token in "+EventStreamTokenHeader+".")
		return nil
	}
	s.mu.Lock()
	res := s.reservations[token]
	s.mu.Unlock()
	if res == nil {
		writeHTTPError(w, mediaJSON, http.StatusNotFound, "No stream is reserved under this token; reserve one with PUT.")
	}
	return res
}

// serveReserved is the stream of res, until the client leaves, the
// authorization expires or the server shuts down; the reservation ends with it.
func (s *Streams) serveReserved(w http.ResponseWriter, r *http.Request, res *reservation) {
	res.mu.Lock()
	taken := res.connected
	res.connected = true
	res.expire.Stop()
	res.mu.Unlock()
	if taken {
		writeHTTPError(w, mediaJSON, http.StatusConflict, "The reservation already has its stream.")
		return
	}
	defer s.end(res)
	sw := openStream(w, sseFraming{}, s.opts.WriteTimeout)
	expired, stop := s.expiry(res.until)
	defer stop()
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	for ok := true; ok; {
		select {
		case ev := <-res.out:
			lapsed := s.lapsed(res.until)
			if !lapsed && (ev.op == nil || !ev.op.stopped.Load()) {
				sw.buf = append(sw.buf, ev.data...)
				ok = sw.flush() && ev.data != nil
			}
			s.opts.Answers.Release(res.client, ev.claimed)
			if lapsed {
				s.endOperationsExpired(sw, res)
				return
			}
		case <-tick.C:
			ok = sw.keepAlive()
		case <-expired:
			s.endOperationsExpired(sw, res)
			return
		case <-res.ctx.Done():
			ok = false
		case <-r.Context().Done():
			ok = false
		}
	}
}

// endOperationsExpired ends each operation of res not stopped with the error of an
// expired authorization, then complete, as a distinct connections mode stream ends.
func (s *Streams) endOperationsExpired(sw *streamWriter, res *reservation) {
	res.mu.Lock()
	ids := slices.Sorted(maps.Keys(res.ops))
	ids = slices.DeleteFunc(ids, func(id string) bool { return res.ops[id].stopped.Load() })
	res.mu.Unlock()
	errs := ErrorList{newError(codeForbidden, "Forbidden: "+msgAuthorizationExpired)}
	for _, id := range ids {
		sw.buf = sw.f.complete(sw.f.fail(sw.buf, id, errs), id)
	}
	sw.flush()
}

// startReserved runs a POSTed operation on res: 202, its events on the
// stream; a request it refuses is answered as GraphQL over HTTP answers it.
func (s *Streams) startReserved(w http.ResponseWriter, r *http.Request, h *Handler, res *reservation) {
	params, batch, status, msg := h.readParams(w, r)
	var ext struct {
		OperationID string `json:"operationId"`
	}
	json.Unmarshal(params.Extensions, &ext) // what else extensions hold is read by start
	if status == 0 && batch == nil && (ext.OperationID == "" || len(ext.OperationID) > maxOperationID) {
		status, msg = http.StatusBadRequest, "An operation on a reserved stream names its extensions.operationId, of at most "+
			strconv.Itoa(maxOperationID)+" bytes."
	}
	if status == 0 && batch != nil {
		status, msg = http.StatusBadRequest, "A batch of operations cannot be streamed; send one operation per request."
	}
	if status != 0 {
		writeHTTPError(w, mediaJSON, status, msg)
		return
	}
	id := ext.OperationID
	ctx, cancel := context.WithCancel(res.ctx)
	entry := &wsOp{id: id, cancel: cancel}
	if status, refused := res.add(id, entry, s.opts.MaxOperations); refused != "" {
		cancel()
		writeHTTPError(w, mediaJSON, status, refused)
		return
	}
	if !claimOrRefuse(w, s.opts.Operations, res.client) {
		res.remove(id, true)()
		res.running.Done()
		return
	}
	// Not the POST's answer claim: the results are written to the stream, after
	// the POST has been answered; each render claims its bytes, and its event
	// holds them (runReserved).
	render := &renderClaim{b: s.opts.Answers, client: res.client}
	op, errs, status := s.start(WithAnswerClaim(withAuthorization(ctx, h.baseContext(r)), render), h, r.Method, &params)
	if errs != nil {
		s.opts.Operations.Release(res.client, 1)
		res.remove(id, true)()
		res.running.Done()
		writeResponse(w, mediaJSON, status, &Response{Errors: errs})
		return
	}
	w.WriteHeader(http.StatusAccepted)
	go s.runReserved(ctx, res, id, entry, op, render)
}

// withAuthorization is the reservation's context, ending with it, holding the
// values of the operation's request (its Authorization, for the resolvers).
func withAuthorization(res, req context.Context) context.Context {
	ctx, cancel := context.WithCancel(context.WithoutCancel(req))
	context.AfterFunc(res, cancel)
	return ctx
}

// runReserved sends an operation's events to its stream, waiting while the
// stream's queue is full, then complete; each holds its bytes of the client's
// answers budget, claimed as its result was rendered, until written, and one
// past it ends the operation.
func (s *Streams) runReserved(ctx context.Context, res *reservation, id string, entry *wsOp, op *streamOp, render *renderClaim) {
	defer res.running.Done()
	defer s.opts.Operations.Release(res.client, 1)
	defer func() { s.opts.Answers.Release(res.client, render.take()) }() // a render no event took
	put := func(ev outMsg) bool {
		select {
		case res.out <- ev: // what a stopped operation queues, the stream drops
			return ctx.Err() == nil // and it sends nothing more, though the queue had room
		case <-ctx.Done():
		}
		s.opts.Answers.Release(res.client, ev.claimed)
		return false
	}
	var refused error
	emit := func(result []byte) bool {
		ev := sseFraming{}.next(nil, id, result)
		if refused = render.ClaimAnswer(int64(len(ev))); refused != nil {
			return false
		}
		return put(outMsg{data: ev, claimed: render.take(), op: entry})
	}
	ok := op.inc == nil && op.events(ctx, s.quit, emit) && ctx.Err() == nil
	if op.inc != nil {
		ok = op.results(emit)
	}
	// Its id is free before its last event, after which the client may use it again.
	defer res.remove(id, true)()
	if refused != nil { // a few bytes, outside the budget, so that the client learns why
		errs := ErrorList{newError(codeTooManyRequests, capitalize(refused.Error())+".")}
		ok = put(outMsg{data: sseFraming{}.fail(nil, id, errs), op: entry})
	}
	if ok {
		put(outMsg{data: sseFraming{}.complete(nil, id), op: entry})
	}
}

// renderClaim is what a reserved operation's render holds of the client's
// answers budget, claimed as it grows, until its event takes it over. One
// goroutine at a time renders and takes.
type renderClaim struct {
	b      Budget
	client string
	held   int64
}

func (c *renderClaim) ClaimAnswer(n int64) error {
	err := c.b.Claim(c.client, max(n-c.held, 0))
	if err == nil {
		c.held = max(n, c.held)
	}
	return err
}

// take hands over what the render holds: the next render claims anew.
func (c *renderClaim) take() (n int64) { n, c.held = c.held, 0; return n }

func (res *reservation) add(id string, op *wsOp, most int) (int, string) {
	res.mu.Lock()
	defer res.mu.Unlock()
	switch _, taken := res.ops[id]; {
	case taken:
		return http.StatusConflict, "An operation with this operationId is already running on the stream."
	case len(res.ops) >= most:
		return http.StatusTooManyRequests, "Too many operations on this stream: at most " + strconv.Itoa(most) + " may be active at once."
	case res.ctx.Err() != nil:
		return http.StatusNotFound, "No stream is reserved under this token; reserve one with PUT."
	case res.closing:
		return http.StatusServiceUnavailable, "The server is shutting down."
	}
	res.ops[id] = op
	res.running.Add(1) // under mu, before end's Wait
	return 0, ""
}

// remove returns what stops the operation id, marking it stopped; forget frees
// its id instead, which only the operation's own goroutine does, before its last event.
func (res *reservation) remove(id string, forget bool) context.CancelFunc {
	res.mu.Lock()
	defer res.mu.Unlock()
	op := res.ops[id]
	switch {
	case op == nil:
		return func() {}
	case forget:
		delete(res.ops, id)
	default:
		op.stopped.Store(true)
	}
	return op.cancel
}
