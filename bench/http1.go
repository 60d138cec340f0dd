package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// The load client's HTTP/1.1, written for the harness rather than taken from
// net/http. The machine has two CPUs, shared by the client and the server being
// measured: net/http's client spends about 22 µs of CPU on a GET and 28 µs on a
// GraphQL POST (request objects, header maps, the transport's connection pool and
// its goroutines per connection), as much as a fast server does, so every
// throughput ratio was pulled towards 1. This client does what wrk does: one
// connection per worker, the request rendered to bytes once (or into a reused
// buffer when its path varies), one write per call, and the answer parsed from a
// bufio.Reader and discarded, allocating nothing per call.

// ioTimeout bounds each read and write on a connection, so a server that stops
// answering makes calls fail instead of hanging the harness.
const ioTimeout = 30 * time.Second

// h1Request is an HTTP request rendered for the wire.
type h1Request struct {
	whole   []byte                                  // the whole request, when its path is fixed
	prefix  []byte                                  // "METHOD ", when the path varies
	suffix  []byte                                  // " HTTP/1.1\r\n", the header and the body, when the path varies
	pathFor func(dst []byte, rng *rand.Rand) []byte // appends one call's path
}

// renderRequest renders hr for the server at host (host:port), with the header
// lines Go's client sends (Host, User-Agent, Content-Length when there is a body,
// then hr.header), so every server sees the requests it saw from net/http.
func renderRequest(host string, hr httpRequest) h1Request {
	var head []byte
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, host...)
	head = append(head, "\r\nUser-Agent: Go-http-client/1.1\r\n"...)
	if hr.body != nil || hr.method == "POST" || hr.method == "PUT" || hr.method == "PATCH" {
		head = append(head, "Content-Length: "...)
		head = strconv.AppendInt(head, int64(len(hr.body)), 10)
		head = append(head, "\r\n"...)
	}
	keys := make([]string, 0, len(hr.header))
	for k := range hr.header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range hr.header[k] {
			head = append(head, k...)
			head = append(head, ": "...)
			head = append(head, v...)
			head = append(head, "\r\n"...)
		}
	}
	head = append(head, "\r\n"...)
	head = append(head, hr.body...)
	prefix := []byte(hr.method + " ")
	if hr.pathFor != nil {
		return h1Request{prefix: prefix, suffix: head, pathFor: hr.pathFor}
	}
	return h1Request{whole: slices.Concat(prefix, []byte(hr.path), head)}
}

// appendTo appends one call's request to dst; rng draws the path when it varies.
func (r *h1Request) appendTo(dst []byte, rng *rand.Rand) []byte {
	if r.pathFor == nil {
		return append(dst, r.whole...)
	}
	dst = append(dst, r.prefix...)
	dst = r.pathFor(dst, rng)
	return append(dst, r.suffix...)
}

// h1Client makes one request, rendered once, over a set of keep-alive connections:
// worker w always uses connection w, so n workers in a closed loop keep n
// connections busy, as wrk's do. With spread, against a loopback server, each
// connection comes from a loopback address of its own (127.0.0.2, .3, …), so that n
// connections stand for n clients; without it they all come from one address, as
// one client's, or a reverse proxy's, do.
type h1Client struct {
	req   h1Request
	conns []h1Conn
}

// newH1Client is a client for the server at addr (host:port) with conns
// connections, dialled on first use.
func newH1Client(addr string, conns int, hr httpRequest, spread bool) *h1Client {
	c := &h1Client{req: renderRequest(addr, hr), conns: make([]h1Conn, conns)}
	loopback := false
	if ap, err := netip.ParseAddrPort(addr); spread && err == nil && ap.Addr().Is4() && ap.Addr().IsLoopback() {
		loopback = true
	}
	for i := range c.conns {
		c.conns[i].addr = addr
		if loopback {
			c.conns[i].from = &net.TCPAddr{IP: net.IPv4(127, 0, byte(i/250), byte(2+i%250))}
		}
	}
	return c
}

// call is the client's callFunc: one request on the worker's connection, the answer
// read and dropped; an answer other than 200 is an error.
func (c *h1Client) call(ctx context.Context, worker int, rng *rand.Rand) error {
	_, err := c.do(ctx, worker, rng, false)
	return err
}

// do makes one request on the worker's connection and, when keep is set, returns
// the body of a 200 answer, valid until the connection's next call.
func (c *h1Client) do(ctx context.Context, worker int, rng *rand.Rand, keep bool) ([]byte, error) {
	cn := &c.conns[worker]
	cn.wbuf = c.req.appendTo(cn.wbuf[:0], rng)
	status, body, err := cn.roundTrip(ctx, cn.wbuf, keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", requestLine(cn.wbuf), err)
	}
	if status != 200 {
		return nil, fmt.Errorf("%s: status %d: %.200s", requestLine(cn.wbuf), status, body)
	}
	return body, nil
}

// close closes every connection.
func (c *h1Client) close() {
	for i := range c.conns {
		c.conns[i].close()
	}
}

// probeHTTP makes the request hr once (with the first path pathFor draws from seed
// 1, when the path varies), on a connection of its own, and returns the body of its
// 200 answer. The probe goes through this client rather than net/http so that a
// body the client misreads fails the probe's check.
func probeHTTP(ctx context.Context, addr string, hr httpRequest) ([]byte, error) {
	c := newH1Client(addr, 1, hr.fixed(1), false)
	defer c.close()
	return c.do(ctx, 0, nil, true)
}

// requestLine is the method and path of a rendered request, for error messages.
func requestLine(req []byte) string {
	if i := bytes.Index(req, []byte(" HTTP/1.1\r\n")); i >= 0 {
		req = req[:i]
	}
	return string(req)
}

// h1Conn is one keep-alive connection, redialled when the server closed it.
type h1Conn struct {
	addr   string
	from   *net.TCPAddr  // the local address to dial from; nil: any
	limit  time.Duration // bounds each call when set; ioTimeout each read and write otherwise
	nc     net.Conn      // nil until dialled, and after close
	br     *bufio.Reader
	wbuf   []byte // the request being sent
	body   []byte // the body being kept
	served int    // answers read on nc

	ctx       context.Context // the context nc was dialled for
	stopAbort func() bool     // unregisters the abort of nc when ctx ends
	renewAt   time.Time       // when nc's deadline is to be pushed on
}

// roundTrip sends req and reads the answer: its status and, when keep is set or the
// status is not 200, its body. A request that fails on a connection that had
// already served (the server closed it while idle) is retried once on a new one, as
// net/http retries; any failure closes the connection, so the next call redials.
func (c *h1Conn) roundTrip(ctx context.Context, req []byte, keep bool) (int, []byte, error) {
	for {
		if err := c.ready(ctx); err != nil {
			return 0, nil, err
		}
		reused := c.served > 0
		status, body, err := c.exchange(req, keep)
		if err == nil {
			return status, body, nil
		}
		c.close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return 0, nil, ctxErr
		}
		if !reused || !errors.Is(err, errStale) {
			return 0, nil, err
		}
	}
}

// errStale marks a failure before any byte of the answer arrived: on a reused
// connection that is a server closing it, and the request can be sent again.
var errStale = errors.New("connection closed before the answer")

// ready dials when there is no connection (or it was dialled for another context)
// and keeps the I/O deadline ahead.
func (c *h1Conn) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.nc != nil && c.ctx != ctx {
		c.close()
	}
	if c.nc == nil {
		if err := c.dial(ctx); err != nil {
			return err
		}
	}
	// A call bounded by limit gets a deadline of its own. Otherwise, since setting
	// one costs a timer update, it is set for ioTimeout and pushed on only when
	// half of that has passed.
	if now := time.Now(); c.limit > 0 {
		if err := c.nc.SetDeadline(now.Add(c.limit)); err != nil {
			return err
		}
	} else if now.After(c.renewAt) {
		if err := c.nc.SetDeadline(now.Add(ioTimeout)); err != nil {
			return err
		}
		c.renewAt = now.Add(ioTimeout / 2)
	}
	// ctx may have ended, and its abort run, before the deadline above replaced
	// the abort's.
	return ctx.Err()
}

// dial opens the connection and ties it to ctx: when ctx ends, a read or write
// blocked on it returns at once.
func (c *h1Conn) dial(ctx context.Context) error {
	d := net.Dialer{Timeout: 10 * time.Second}
	if c.from != nil {
		d.LocalAddr = c.from
	}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	if c.br == nil {
		c.br = bufio.NewReaderSize(nc, 16<<10)
	} else {
		c.br.Reset(nc)
	}
	c.nc, c.ctx, c.served, c.renewAt = nc, ctx, 0, time.Time{}
	c.stopAbort = context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	return nil
}

// close closes the connection; the next call dials a new one.
func (c *h1Conn) close() {
	if c.nc == nil {
		return
	}
	c.stopAbort()
	c.nc.Close()
	c.nc, c.ctx, c.stopAbort = nil, nil, nil
}

// exchange writes req and reads one answer. When the answer says Connection: close,
// or its body runs to the end of the stream, the connection is closed after it.
func (c *h1Conn) exchange(req []byte, keep bool) (int, []byte, error) {
	if _, err := c.nc.Write(req); err != nil {
		return 0, nil, errors.Join(errStale, err)
	}
	resp, err := readHead(c.br)
	if err != nil {
		return 0, nil, err
	}
	c.body = c.body[:0]
	var dst *[]byte
	if keep || resp.status != 200 {
		dst = &c.body
	}
	if err := resp.readBody(c.br, dst); err != nil {
		return 0, nil, err
	}
	c.served++
	if resp.close {
		c.close()
	}
	return resp.status, c.body, nil
}

// h1Head is what the status line and the header say about an answer.
type h1Head struct {
	status  int
	length  int64 // Content-Length, -1 when absent
	chunked bool  // Transfer-Encoding: chunked
	close   bool  // the server closes the connection after this answer
}

// readHead reads the status line and the header of an answer, skipping interim 1xx
// answers.
func readHead(br *bufio.Reader) (h1Head, error) {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if len(line) == 0 && (err == io.EOF || errors.Is(err, syscall.ECONNRESET)) {
				return h1Head{}, errors.Join(errStale, err)
			}
			return h1Head{}, fmt.Errorf("status line: %w", err)
		}
		h, err := parseStatusLine(line)
		if err != nil {
			return h, err
		}
		if err := readHeader(br, &h); err != nil {
			return h, err
		}
		if h.status >= 200 || h.status == 101 {
			return h, nil
		}
	}
}

// parseStatusLine reads "HTTP/1.x NNN reason\r\n". An HTTP/1.0 server closes the
// connection after each answer unless it says otherwise, which the harness's
// servers never do.
func parseStatusLine(line []byte) (h1Head, error) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return h1Head{}, fmt.Errorf("malformed status line %q", line)
	}
	status := 0
	for _, b := range line[9:12] {
		if b < '0' || b > '9' {
			return h1Head{}, fmt.Errorf("malformed status line %q", line)
		}
		status = status*10 + int(b-'0')
	}
	return h1Head{status: status, length: -1, close: line[7] == '0'}, nil
}

// readHeader reads header lines up to the empty one, noting the few that frame the
// body or end the connection.
func readHeader(br *bufio.Reader, h *h1Head) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("header: %w", err)
		}
		line = trimSpace(line)
		if len(line) == 0 {
			return nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return fmt.Errorf("malformed header line %q", line)
		}
		name, value := line[:colon], trimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := parseUint(value, 10)
			if err != nil {
				return fmt.Errorf("Content-Length %q: %w", value, err)
			}
			h.length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			h.chunked = bytes.EqualFold(value, []byte("chunked"))
			if !h.chunked && !bytes.EqualFold(value, []byte("identity")) {
				return fmt.Errorf("unsupported Transfer-Encoding %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			h.close = bytes.EqualFold(value, []byte("close"))
		}
	}
}

// readBody reads the body the head announces, appending it to *dst when dst is not
// nil and dropping it otherwise.
func (h *h1Head) readBody(br *bufio.Reader, dst *[]byte) error {
	switch {
	case h.status == 101 || h.status == 204 || h.status == 304:
		return nil
	case h.chunked:
		return readChunked(br, dst)
	case h.length >= 0:
		return readN(br, h.length, dst)
	default: // the body runs to the end of the stream
		h.close = true
		if dst == nil {
			_, err := io.Copy(io.Discard, br)
			return err
		}
		b, err := io.ReadAll(br)
		*dst = append(*dst, b...)
		return err
	}
}

// readChunked reads a chunked body: chunks of "SIZE[;ext]\r\nDATA\r\n", a chunk of
// size 0, then trailer lines up to an empty one.
func readChunked(br *bufio.Reader, dst *[]byte) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("chunk size: %w", err)
		}
		size := trimSpace(line)
		if semi := bytes.IndexByte(size, ';'); semi >= 0 {
			size = trimSpace(size[:semi])
		}
		n, err := parseUint(size, 16)
		if err != nil {
			return fmt.Errorf("chunk size %q: %w", line, err)
		}
		if n == 0 {
			return skipTrailer(br)
		}
		if err := readN(br, n, dst); err != nil {
			return err
		}
		if crlf, err := br.ReadSlice('\n'); err != nil || len(trimSpace(crlf)) != 0 {
			return fmt.Errorf("chunk not ended by CRLF: %q, %v", crlf, err)
		}
	}
}

// skipTrailer reads the trailer lines after the last chunk, up to the empty line.
func skipTrailer(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("trailer: %w", err)
		}
		if len(trimSpace(line)) == 0 {
			return nil
		}
	}
}

// readN reads n bytes of body, appended to *dst or dropped.
func readN(br *bufio.Reader, n int64, dst *[]byte) error {
	if dst == nil {
		_, err := br.Discard(int(n))
		return noEOF(err)
	}
	b := slices.Grow(*dst, int(n))
	m := len(b)
	b = b[:m+int(n)]
	_, err := io.ReadFull(br, b[m:])
	*dst = b
	return noEOF(err)
}

// noEOF turns the end of the stream in the middle of a body into an error that
// says so.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseUint parses a non-negative number in base 10 or 16 without allocating, as
// strconv would for a []byte argument.
func parseUint(b []byte, base int64) (int64, error) {
	if len(b) == 0 || len(b) > 15 {
		return 0, errors.New("not a number of up to 15 digits")
	}
	var n int64
	for _, c := range b {
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = int64(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = int64(c-'A') + 10
		default:
			return 0, errors.New("not a number")
		}
		n = n*base + d
	}
	return n, nil
}

// trimSpace trims spaces, tabs and the line end.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
