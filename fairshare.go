package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// Every bound on a single request (cost, depth, sizes) leaves one thing open: a
// client that sends many cheap-to-refuse requests at once still takes every CPU,
// and everybody else's requests wait behind its own. The fair share closes it:
// the requests of one client address run at most share at a time, and the rest
// of that client's requests wait their turn, in order, so another client always
// finds a CPU.
//
// A request first takes a place among its client's (share running plus waiting
// at most, so a client's bodies read at once are bounded too), then its body is
// read (readAhead), then it waits for its turn, which it holds until the handler
// first writes, hijacks the connection for a WebSocket, or returns: the work a
// request makes the service do happens in between. So a client that sends its
// body or reads its answer slowly holds no turn while it does, and its other
// requests, and those of every client behind the same address (a NAT), go on.
//
// A gRPC client's messages (callTurn, grpc.go), the set-up of its GraphQL
// WebSocket operations (graphql.WebSocketOptions.ClientWork, wired in
// graphql.go) and the reading of its long request heads (framingConn) take turns
// in the same share as its HTTP requests: the turns are a client's share of the
// CPUs, whichever surface it calls and however early the work comes.
//
// Turns bound how many of a client's requests run at once, not how much of the
// time they take: a client that always has a costly request ready (an attacker
// sending documents that take milliseconds to refuse) would hold its turns all
// the time, and with the CPUs shared with everybody else's work, everybody
// else's answers come late. So when a client has requests waiting for its
// turns, a turn held for paceAfter or longer is given back only as long again
// after the request leaves it, while another client has been seen in the last
// paceWindow: a client then holds its turns at most half the time. Alone, a
// client keeps the whole turn; cheap requests, and a client's one request at a
// time, are never paced.

const (
	// defaultClientWaiting is -http-client-waiting's default: the requests of one
	// client address that may wait for its share. Past them the client is answered
	// 429 at once. Each waiting request holds a connection and a goroutine, both
	// bounded overall by -http-max-conns.
	defaultClientWaiting = 256

	// paceAfter is how long a request may hold its turn before the turn is
	// paced: far above what the service's ordinary requests take (tens to
	// hundreds of microseconds), far below a hostile document's cost.
	paceAfter = time.Millisecond
	// paceWindow is how recently another client must have been seen for the
	// service to count as shared.
	paceWindow = time.Second
)

// defaultClientShare is -http-client-share's default: half the CPUs the service
// may use, at least one, so that one client leaves the other half to the rest.
func defaultClientShare() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// fairShare admits the requests of each client address share at a time.
type fairShare struct {
	share   int // requests of one client running at once
	waiting int // requests of one client waiting at once; more are refused

	// now and afterFunc are time.Now and time.AfterFunc, but for tests.
	now       func() time.Time
	afterFunc func(time.Duration, func()) *time.Timer

	mu      sync.Mutex
	clients map[string]*clientTurns
	latest  [2]seenClient // the last two distinct clients to arrive, the latest first
}

// seenClient is a client and when its latest request arrived.
type seenClient struct {
	client string
	at     time.Time
}

// clientTurns is one client's running and waiting requests; it exists while
// the client has any.
type clientTurns struct {
	running chan struct{} // a token per running request; senders wait in order
	users   int           // running and waiting requests
}

func newFairShare(share, waiting int) *fairShare {
	return &fairShare{share: share, waiting: waiting, clients: map[string]*clientTurns{},
		now: time.Now, afterFunc: time.AfterFunc}
}

// place is a request counted among its client's, running or waiting for a turn.
type place struct {
	f      *fairShare
	client string
	t      *clientTurns
}

// reserve counts a request of client in, or reports false when the client
// already has as many requests running and waiting as it may. Reserving before
// the body is read (readAhead) bounds the bodies one client has read at once.
func (f *fairShare) reserve(client string) (*place, bool) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.latest[0].client != client {
		f.latest[1] = f.latest[0]
	}
	f.latest[0] = seenClient{client, now}
	t := f.clients[client]
	if t == nil {
		t = &clientTurns{running: make(chan struct{}, f.share)}
		f.clients[client] = t
	}
	if t.users >= f.share+f.waiting {
		return nil, false
	}
	t.users++
	return &place{f, client, t}, true
}

// take reserves a place for a request of client and waits for its turn, for
// work that has nothing to read first (a gRPC message, a WebSocket operation):
// it returns the function that gives the turn back, or the client's busy error
// when it has as many requests as it may, or ctx's error when ctx ends first.
func (f *fairShare) take(ctx context.Context, client string) (leave func(), err error) {
	p, ok := f.reserve(client)
	if !ok {
		return nil, f.busy(client)
	}
	if leave, ok = p.wait(ctx); !ok {
		return nil, ctx.Err()
	}
	return leave, nil
}

// run runs work in one of client's turns (take), or returns why it did not.
func (f *fairShare) run(ctx context.Context, client string, work func()) error {
	leave, err := f.take(ctx, client)
	if err != nil {
		return err
	}
	defer leave()
	work()
	return nil
}

// heldTurn is a turn kept across calls and given back by whichever comes next:
// a later read or receive, a send, the end of a call or the close of a
// connection (framingConn, callTurn). Once it has ended, a turn handed to it is
// given back at once, so that one taken late by another goroutine is not kept.
type heldTurn struct {
	mu    sync.Mutex
	leave func() // gives back the turn held; nil when none is
	ended bool
}

// hold keeps the turn that leave gives back, or gives it back at once when h
// has ended.
func (h *heldTurn) hold(leave func()) {
	h.mu.Lock()
	if !h.ended {
		h.leave, leave = leave, nil
	}
	h.mu.Unlock()
	if leave != nil {
		leave()
	}
}

// giveBack gives back the turn held, if any.
func (h *heldTurn) giveBack() {
	h.mu.Lock()
	leave := h.leave
	h.leave = nil
	h.mu.Unlock()
	if leave != nil {
		leave()
	}
}

// end gives back the turn held, and any handed to h later.
func (h *heldTurn) end() {
	h.mu.Lock()
	h.ended = true
	h.mu.Unlock()
	h.giveBack()
}

// busy is the error for a request of client that reserve refused.
func (f *fairShare) busy(client string) *Error {
	return &Error{Kind: KindExhausted, Message: fmt.Sprintf("too many requests at once from %s: %d may run and %d wait; try again shortly", client, f.share, f.waiting)}
}

// wait waits for one of the client's turns and returns the function that gives
// it back and counts the request out (once; later calls do nothing). When ctx
// ends first it counts the request out and reports false.
func (p *place) wait(ctx context.Context) (leave func(), ok bool) {
	select {
	case p.t.running <- struct{}{}:
	default:
		select {
		case p.t.running <- struct{}{}:
		case <-ctx.Done():
			p.f.forget(p.client, p.t)
			return nil, false
		}
	}
	start := p.f.now()
	return sync.OnceFunc(func() {
		now := p.f.now()
		if held := now.Sub(start); held >= paceAfter && p.f.paced(p, now) {
			p.f.afterFunc(held, p.giveBack)
			return
		}
		p.giveBack()
	}), true
}

// giveBack returns the request's turn and counts it out.
func (p *place) giveBack() {
	<-p.t.running
	p.f.forget(p.client, p.t)
}

// paced reports whether p's costly turn is paced: when p's client has more
// requests than turns (it sends faster than it is served) and another client
// arrived within paceWindow of now. The latest other client is the latest of
// all, or, when that is p's client itself, the one before it.
//
// A client with no request waiting is not paced: under a full CPU even a cheap
// request can hold its turn past paceAfter while it waits to run, and a
// client that sends one request at a time is no flood.
func (f *fairShare) paced(p *place, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.t.users <= len(p.t.running) {
		return false
	}
	other := f.latest[0]
	if other.client == p.client {
		other = f.latest[1]
	}
	return other.client != "" && now.Sub(other.at) < paceWindow
}

// forget counts one request of client's out, and the client with it when it
// was its last.
func (f *fairShare) forget(client string, t *clientTurns) {
	f.mu.Lock()
	t.users--
	if t.users == 0 {
		delete(f.clients, client)
	}
	f.mu.Unlock()
}

// readAhead reads r's body, at most limit bytes of it, and gives the handler a
// body that yields the same bytes, then whatever follows them on the connection,
// or the error the read ended with (a client gone, the read timeout).
//
// The bytes are kept in chunks of at most aheadChunk, each allocated when the
// one before it is full, so that a client claims no more than a chunk beyond
// what it has sent (a body declared at a megabyte of which ten bytes come claims
// one chunk, not the megabyte), and a large body is not copied as a growing
// buffer doubles: a 270 KB body read into a bytes.Buffer allocated about a
// megabyte.
func readAhead(r *http.Request, limit int64) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	parts := make([]io.Reader, 0, 4) // io.MultiReader copies it
	var rest io.Reader = r.Body
	// A body of unknown length (chunked) is read in chunks doubling from
	// minAheadChunk; one of declared length in chunks of what is left of it, then
	// one byte's room to read its end.
	for read, grow := int64(0), int64(minAheadChunk); read < limit; grow = min(2*grow, aheadChunk) {
		size := grow
		if r.ContentLength >= 0 {
			size = max(1, min(r.ContentLength-read, aheadChunk))
		}
		chunk := make([]byte, min(size, limit-read))
		n, err := readFull(r.Body, chunk)
		read += int64(n)
		if n > 0 {
			parts = append(parts, bytes.NewReader(chunk[:n]))
		}
		if err != nil {
			if err != io.EOF {
				rest = &failedReader{err}
			}
			break
		}
	}
	r.Body = readCloser{io.MultiReader(append(parts, rest)...), r.Body}
}

// readFull reads from r until p is full or a read fails, and returns what it
// read and the failure, io.EOF at the end. Unlike io.ReadFull it does not turn
// an end in the middle into io.ErrUnexpectedEOF, which net/http's body returns
// for a client gone before its declared length arrived.
func readFull(r io.Reader, p []byte) (n int, err error) {
	for n < len(p) && err == nil {
		var m int
		m, err = r.Read(p[n:])
		n += m
	}
	return n, err
}

const (
	// aheadChunk is the largest piece of a body readAhead allocates at once:
	// larger than the service's usual bodies, a sixteenth of the largest.
	aheadChunk = 64 << 10
	// minAheadChunk is the first piece of a body of unknown length (chunked).
	minAheadChunk = 512
)

type readCloser struct {
	io.Reader
	io.Closer
}

// failedReader fails every read with err.
type failedReader struct{ err error }

func (f *failedReader) Read([]byte) (int, error) { return 0, f.err }

// turnWriter gives the request's turn back on the first write, flush or hijack.
type turnWriter struct {
	http.ResponseWriter
	leave func()
}

func (w *turnWriter) WriteHeader(code int) {
	w.leave()
	w.ResponseWriter.WriteHeader(code)
}

func (w *turnWriter) Write(b []byte) (int, error) {
	w.leave()
	return w.ResponseWriter.Write(b)
}

// Flush gives the turn back too: a flushing handler is streaming its answer.
func (w *turnWriter) Flush() {
	w.leave()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack gives the turn back: a WebSocket's work is bounded by its own caps.
func (w *turnWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.leave()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *turnWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
